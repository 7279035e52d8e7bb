//! The BM25F index (docs/spec.md §12): per token, the concepts that hold it
//! in each of the four fields with how often, each concept's field lengths
//! in tokens, each token's document frequency, and per token and field the
//! largest frequency and smallest length, the bounds dynamic pruning needs.
//!
//! It is built from the per-field index's chunks: every distinct folded
//! piece of the vocabulary is analysed once ([`Analyzer`]), and each piece's
//! per-concept counts are spread onto its tokens.

use rayon::prelude::*;

use super::build::Chunk;
use super::intern::Interner;
use super::{vocab_word, FieldIndex};
use crate::array::Array;
use crate::text::analyze::{Analyzer, Language};

/// The BM25F fields, in the order of every sum over fields (docs/spec.md §12.3).
pub const BM25F_FIELDS: [&str; 4] = ["title", "tags", "description", "body"];

/// One field's postings: token `t`'s concepts are
/// `docs[starts[t]..starts[t + 1]]` (ascending), each with its frequency in
/// `tfs` (at most `u16::MAX`).
#[derive(Default)]
pub struct FieldPostings {
    pub starts: Array<u64>,
    pub docs: Array<u32>,
    pub tfs: Array<u16>,
    /// Each concept's length of the field, in tokens.
    pub lengths: Array<u32>,
    /// The sum of `lengths` (kept, so statistics need no pass over them).
    pub total: u64,
    /// Per token: its largest frequency in the field, and the smallest
    /// length of a concept that holds it there (`u32::MAX` when none does).
    pub max_tf: Array<u16>,
    pub min_len: Array<u32>,
}

impl FieldPostings {
    /// Token `t`'s concepts and frequencies in this field.
    pub fn list(&self, t: u32) -> (&[u32], &[u16]) {
        let (a, b) = (
            self.starts[t as usize] as usize,
            self.starts[t as usize + 1] as usize,
        );
        (&self.docs[a..b], &self.tfs[a..b])
    }
}

#[derive(Default)]
pub struct Bm25fIndex {
    /// The analyzer's language (`None`: tokens are not stemmed).
    pub language: Option<Language>,
    /// The distinct tokens in byte order, each followed by `\n`; token `t`
    /// starts at `token_starts[t]` (one extra entry at the end).
    pub vocab: Array<u8>,
    pub token_starts: Array<u32>,
    /// Per token, how many concepts hold it in any field.
    pub df: Array<u32>,
    pub fields: [FieldPostings; 4],
}

impl Bm25fIndex {
    /// How many concepts the index covers.
    pub fn len(&self) -> usize {
        self.fields[0].lengths.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn token_count(&self) -> usize {
        self.token_starts.len().saturating_sub(1)
    }

    pub fn token(&self, t: u32) -> &[u8] {
        vocab_word(&self.vocab, &self.token_starts, t)
    }

    /// The id of a token, by binary search over the sorted vocabulary.
    pub fn token_id(&self, token: &str) -> Option<u32> {
        let (mut lo, mut hi) = (0usize, self.token_count());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.token(mid as u32).cmp(token.as_bytes()) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid as u32),
            }
        }
        None
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

/// The BM25F index of `n` concepts from the per-field index's chunks, merged
/// vocabularies and local → global word ids, field by field.
pub fn build(
    analyzer: &Analyzer,
    n: usize,
    chunks: [&[Chunk]; 3],
    fields: [&FieldIndex; 3],
    remaps: [&[Vec<u32>]; 3],
) -> Bm25fIndex {
    let (vocab, token_starts, word_tokens) = tokens_of_words(analyzer, fields);
    let n_tokens = token_starts.len() - 1;
    let built: Vec<FieldPostings> = SOURCES
        .par_iter()
        .map(|&(k, half)| field_postings(n, n_tokens, chunks[k], remaps[k], &word_tokens[k], half))
        .collect();
    let fields: [FieldPostings; 4] = match built.try_into() {
        Ok(f) => f,
        Err(_) => unreachable!("four sources make four fields"),
    };
    let df = document_frequencies(&fields, n_tokens);
    Bm25fIndex {
        language: analyzer.language(),
        vocab: vocab.into(),
        token_starts: token_starts.into(),
        df: df.into(),
        fields,
    }
}

/// Each field's words as tokens (CSR over the field's word ids: a word's
/// token ids, repeated as often as the token occurs in it), and the sorted
/// token vocabulary they index.
#[allow(clippy::type_complexity)]
fn tokens_of_words(
    analyzer: &Analyzer,
    fields: [&FieldIndex; 3],
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
    // merged (their frequencies summed).
    let mut kept = vec![0u64; n_tokens];
    for t in 0..n_tokens {
        let (a, b) = (count[t] as usize, count[t + 1] as usize);
        if sources[t] <= 1 {
            kept[t] = (b - a) as u64;
            continue;
        }
        let mut pairs: Vec<(u32, u16)> = docs[a..b]
            .iter()
            .copied()
            .zip(tfs[a..b].iter().copied())
            .collect();
        pairs.sort_unstable_by_key(|&(p, _)| p);
        let mut out = 0usize;
        for (p, tf) in pairs {
            if out > 0 && docs[a + out - 1] == p {
                tfs[a + out - 1] = tfs[a + out - 1].saturating_add(tf);
            } else {
                docs[a + out] = p;
                tfs[a + out] = tf;
                out += 1;
            }
        }
        kept[t] = out as u64;
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
    let (max_tf, min_len): (Vec<u16>, Vec<u32>) = (0..n_tokens)
        .into_par_iter()
        .map(|t| {
            let (a, b) = (starts[t] as usize, starts[t + 1] as usize);
            let max_tf = tfs[a..b].iter().copied().max().unwrap_or(0);
            let min_len = docs[a..b]
                .iter()
                .map(|&p| lengths[p as usize])
                .min()
                .unwrap_or(u32::MAX);
            (max_tf, min_len)
        })
        .unzip();
    let total = lengths.iter().map(|&l| u64::from(l)).sum();
    FieldPostings {
        starts: starts.into(),
        docs: docs.into(),
        tfs: tfs.into(),
        lengths: lengths.into(),
        total,
        max_tf: max_tf.into(),
        min_len: min_len.into(),
    }
}

/// Per token, how many concepts hold it in any field: the size of the union
/// of its four lists.
fn document_frequencies(fields: &[FieldPostings; 4], n_tokens: usize) -> Vec<u32> {
    (0..n_tokens as u32)
        .into_par_iter()
        .map(|t| {
            let lists: [&[u32]; 4] = std::array::from_fn(|f| fields[f].list(t).0);
            let mut at = [0usize; 4];
            let mut df = 0u32;
            loop {
                let next = (0..4).filter_map(|f| lists[f].get(at[f]).copied()).min();
                let Some(p) = next else { break };
                df += 1;
                for f in 0..4 {
                    if lists[f].get(at[f]) == Some(&p) {
                        at[f] += 1;
                    }
                }
            }
            df
        })
        .collect()
}
