//! Building the BM25F index from the per-field index's chunks: every
//! distinct folded piece of the vocabulary is analysed once ([`Analyzer`]);
//! then, per token and in parallel, its source pieces' postings are gathered
//! chunk by chunk (chunks hold ascending positions, so no list needs a
//! global sort), its four fields' lists merged side by side, with the
//! pruning bounds.

use rayon::prelude::*;

use super::{Bm25fIndex, BLOCK};
use crate::index::build::{Chunk, Vocab};
use crate::index::intern::Interner;
use crate::text::analyze::{Analyzer, Language};

/// One per-field index field seen from the tokens: each token's source
/// words, with how many times the token comes out of each
/// (`words[starts[t]..starts[t + 1]]`, ascending), and per chunk each global
/// word's local id (`NONE` where the chunk lacks it).
struct Sources<'a> {
    chunks: &'a [Chunk],
    starts: Vec<u32>,
    words: Vec<(u32, u16)>,
    local: Vec<Vec<u32>>,
}

const NONE: u32 = u32::MAX;

impl<'a> Sources<'a> {
    fn new(
        chunks: &'a [Chunk],
        vocab: &Vocab,
        (wt_starts, wt_toks): &(Vec<u32>, Vec<u32>),
        n_tokens: usize,
    ) -> Sources<'a> {
        // (token, word, times) for every word, a token once per word.
        let mut pairs: Vec<(u32, u32, u16)> = Vec::with_capacity(wt_toks.len());
        for g in 0..vocab.word_count() {
            let from = pairs.len();
            for &t in &wt_toks[wt_starts[g] as usize..wt_starts[g + 1] as usize] {
                match pairs[from..].iter_mut().find(|p| p.0 == t) {
                    Some(p) => p.2 = p.2.saturating_add(1),
                    None => pairs.push((t, g as u32, 1)),
                }
            }
        }
        let mut starts = vec![0u32; n_tokens + 1];
        for p in &pairs {
            starts[p.0 as usize + 1] += 1;
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let mut at = starts.clone();
        let mut words = vec![(0u32, 0u16); pairs.len()];
        for &(t, g, times) in &pairs {
            words[at[t as usize] as usize] = (g, times);
            at[t as usize] += 1;
        }
        let local = vocab
            .remaps
            .par_iter()
            .map(|remap| {
                let mut l = vec![NONE; vocab.word_count()];
                for (w, &g) in remap.iter().enumerate() {
                    l[g as usize] = w as u32;
                }
                l
            })
            .collect();
        Sources {
            chunks,
            starts,
            words,
            local,
        }
    }

    /// Token `t`'s concepts in one BM25F field (`half` as in [`SOURCES`]),
    /// ascending, each with its frequency: the frequencies of its source
    /// words, each times the token comes out of it, summed (each stopping at
    /// `u16::MAX`).
    fn list(
        &self,
        t: usize,
        half: Option<bool>,
        out: &mut Vec<(u32, u16)>,
        scratch: &mut Vec<(u32, u16)>,
    ) {
        out.clear();
        let words = &self.words[self.starts[t] as usize..self.starts[t + 1] as usize];
        for (ch, local) in self.chunks.iter().zip(&self.local) {
            // Chunks hold ascending positions, one range after the other.
            let target = if words.len() == 1 {
                &mut *out
            } else {
                &mut *scratch
            };
            if words.len() > 1 {
                target.clear();
            }
            for &(g, times) in words {
                let l = local[g as usize];
                if l == NONE {
                    continue;
                }
                let range = ch.starts[l as usize] as usize..ch.starts[l as usize + 1] as usize;
                for (&p, &tf) in ch.postings[range.clone()].iter().zip(&ch.tfs[range]) {
                    let tf = sub_tf(tf, half).saturating_mul(times);
                    if tf > 0 {
                        target.push((p, tf));
                    }
                }
            }
            if words.len() > 1 {
                scratch.sort_unstable_by_key(|&(p, _)| p);
                for &(p, tf) in scratch.iter() {
                    match out.last_mut() {
                        Some(last) if last.0 == p => last.1 = last.1.saturating_add(tf),
                        _ => out.push((p, tf)),
                    }
                }
            }
        }
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
    let (sources, field_lengths): (Vec<Sources<'_>>, Vec<Vec<u32>>) = rayon::join(
        || {
            (0..3)
                .into_par_iter()
                .map(|k| Sources::new(chunks[k], fields[k], &word_tokens[k], n_tokens))
                .collect()
        },
        || {
            SOURCES
                .par_iter()
                .map(|&(k, half)| {
                    lengths_of(n, chunks[k], &fields[k].remaps, &word_tokens[k], half)
                })
                .collect()
        },
    );
    let mut lengths = vec![0u32; 4 * n];
    for (f, field) in field_lengths.iter().enumerate() {
        for (d, &l) in field.iter().enumerate() {
            lengths[4 * d + f] = l;
        }
    }
    let totals: [u64; 4] =
        std::array::from_fn(|f| field_lengths[f].iter().map(|&l| u64::from(l)).sum());
    let merged: Vec<Merged> = (0..n_tokens)
        .into_par_iter()
        .map_init(Lists::default, |lists, t| {
            lists.merged(t, &sources, &lengths)
        })
        .collect();
    assemble(
        analyzer.language(),
        vocab,
        token_starts,
        lengths,
        totals,
        merged,
    )
}

/// Each field's length in tokens per concept: a word's frequency times its
/// number of tokens, summed (stopping at `u32::MAX`).
fn lengths_of(
    n: usize,
    chunks: &[Chunk],
    remaps: &[Vec<u32>],
    (wt_starts, _): &(Vec<u32>, Vec<u32>),
    half: Option<bool>,
) -> Vec<u32> {
    let mut lengths = vec![0u32; n];
    for (ch, remap) in chunks.iter().zip(remaps) {
        for (w, &g) in remap.iter().enumerate() {
            let toks = wt_starts[g as usize + 1] - wt_starts[g as usize];
            if toks == 0 {
                continue;
            }
            let range = ch.starts[w] as usize..ch.starts[w + 1] as usize;
            for (&p, &tf) in ch.postings[range.clone()].iter().zip(&ch.tfs[range]) {
                let l = &mut lengths[p as usize];
                *l = l.saturating_add(u32::from(sub_tf(tf, half)).saturating_mul(toks));
            }
        }
    }
    lengths
}

/// Scratch lists of one thread: a token's list in each BM25F field.
#[derive(Default)]
struct Lists {
    fields: [Vec<(u32, u16)>; 4],
    scratch: Vec<(u32, u16)>,
}

impl Lists {
    /// Token `t`'s merged list: its four fields' lists side by side.
    fn merged(&mut self, t: usize, sources: &[Sources<'_>], lengths: &[u32]) -> Merged {
        for (f, &(k, half)) in SOURCES.iter().enumerate() {
            sources[k].list(t, half, &mut self.fields[f], &mut self.scratch);
        }
        // Each list ends with a sentinel past every position, so the merge
        // needs no end tests.
        for list in &mut self.fields {
            list.push((u32::MAX, 0));
        }
        let lists = &self.fields;
        let total: usize = lists.iter().map(|l| l.len() - 1).sum();
        let mut m = Merged {
            min_len: [u32::MAX; 4],
            docs: Vec::with_capacity(total),
            tfs: Vec::with_capacity(4 * total),
            ..Merged::default()
        };
        let mut at = [0usize; 4];
        let mut block_from = 0;
        loop {
            let heads: [(u32, u16); 4] = std::array::from_fn(|f| lists[f][at[f]]);
            let d = heads.iter().map(|h| h.0).min().unwrap_or(u32::MAX);
            if d == u32::MAX {
                break;
            }
            m.docs.push(d);
            for f in 0..4 {
                let here = heads[f].0 == d;
                m.tfs.push(if here { heads[f].1 } else { 0 });
                at[f] += usize::from(here);
            }
            if m.docs.len() - block_from == BLOCK {
                m.close_block(block_from, lengths);
                block_from = m.docs.len();
            }
        }
        if m.docs.len() > block_from {
            m.close_block(block_from, lengths);
        }
        if m.docs.len() <= BLOCK {
            // One block: the token's own bounds say it all.
            m.block_last.clear();
            m.block_max_tf.clear();
            m.block_min_len.clear();
        }
        m
    }
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

/// The index from each token's merged list, laid end to end.
fn assemble(
    language: Option<Language>,
    vocab: Vec<u8>,
    token_starts: Vec<u32>,
    lengths: Vec<u32>,
    totals: [u64; 4],
    merged: Vec<Merged>,
) -> Bm25fIndex {
    let n_tokens = merged.len();
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
