//! The per-field index, built once per bundle snapshot.
//!
//! A query term never contains white space, so a term occurs in a field
//! exactly when it occurs inside one of the field's white-space-delimited
//! words (after folding, which maps white space to itself and nothing else to
//! white space). Each field therefore keeps its distinct folded words in one
//! `\n`-separated buffer (the vocabulary) with CSR postings of the concepts
//! that hold each word. A substring query is one SIMD `memmem` scan over the
//! vocabulary — far smaller than the corpus — and a union of postings.

pub mod bm25f;
mod build;
pub mod intern;
mod scratch;
pub mod splice;
pub mod trigram;

pub use build::{chunk_fields, Chunks};
use build::{merge_field, merge_vocab, tag_lists};
pub use scratch::Scratches;

use std::borrow::Borrow;

use rustc_hash::FxHashMap;

use crate::array::Array;
use crate::concept::source::TextError;
use crate::concept::Concept;
use crate::progress::Progress;
use crate::text::analyze::Analyzer;
use bm25f::Bm25fIndex;
use trigram::Trigrams;

/// The three scored fields of docs/spec.md §3.2, with their weights.
pub const FIELDS: [(Field, u32); 3] = [(Field::Title, 3), (Field::TagsDesc, 2), (Field::Body, 1)];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Title,
    TagsDesc,
    Body,
}

impl Field {
    /// The field's name in `explain` (docs/spec.md §3.3).
    pub fn name(self) -> &'static str {
        match self {
            Field::Title => "title",
            Field::TagsDesc => "tags_desc",
            Field::Body => "body",
        }
    }

    /// Apply `f` to each piece of the field's text (docs/spec.md §3.2). White space
    /// between pieces only separates words, so `tags_desc` needs no joining.
    /// The body may have to be read back from the cache file, which can fail.
    /// `f` also gets which part of the field the piece is: for `tags_desc`,
    /// 0 for a tag and 1 for the description; 0 for the other fields.
    pub fn for_each_piece(
        self,
        c: &Concept,
        mut f: impl FnMut(usize, &str),
    ) -> Result<(), TextError> {
        match self {
            Field::Title => f(0, c.title.as_deref().unwrap_or("")),
            Field::TagsDesc => {
                c.tags.iter().for_each(|t| f(0, t));
                f(1, c.description.as_deref().unwrap_or(""));
            }
            Field::Body => f(0, &c.body()?),
        }
        Ok(())
    }
}

/// Every array is a [`Array`]: built in memory, or a view into the mapped
/// cache file of a reopened bundle.
#[derive(Default)]
pub struct FieldIndex {
    /// Distinct folded words, each followed by `\n`.
    pub vocab: Array<u8>,
    /// Start of word `i` in `vocab`; one extra entry at the end.
    pub word_starts: Array<u32>,
    /// Postings of sparse word `i`: `postings[post_starts[i]..post_starts[i + 1]]`,
    /// ascending concept positions (empty for dense words).
    pub post_starts: Array<u64>,
    pub postings: Array<u32>,
    /// Dense words — held by more than one concept in 32, where a bitset is
    /// smaller than a postings list — as bitsets: `dense_slot[i]` is the
    /// bitset's index in `dense_bits` (`NOT_DENSE` for sparse words).
    pub dense_slot: Array<u32>,
    pub dense_bits: Array<u64>,
    /// 64-bit words per bitset: `ceil(concepts / 64)`.
    pub bitset_words: usize,
    /// Substring lookup over `vocab`.
    pub trigrams: Trigrams,
}

pub const NOT_DENSE: u32 = u32::MAX;

pub struct Index {
    pub fields: [FieldIndex; 3],
    /// The BM25F scorer's index (docs/spec.md §12).
    pub bm25f: Bm25fIndex,
    /// Folded tag → ascending positions of the concepts that carry it.
    pub tags: FxHashMap<String, Array<u32>>,
}

impl Index {
    /// The index of concepts whose texts are in memory (a test helper: it
    /// panics when a body must be read back and cannot be).
    pub fn build<C: Borrow<Concept> + Sync>(concepts: &[C], analyzer: &Analyzer) -> Index {
        Index::build_with(concepts, analyzer, &Progress::default()).expect("bodies readable")
    }

    /// The index of `concepts`, stopping early (with an unusable index) once
    /// `progress` is cancelled; an error when a stored body cannot be read.
    pub fn build_with<C: Borrow<Concept> + Sync>(
        concepts: &[C],
        analyzer: &Analyzer,
        progress: &Progress,
    ) -> Result<Index, TextError> {
        let chunks = chunk_fields(concepts, 0, progress, &Scratches::default());
        Index::from_chunks(chunks, concepts, analyzer)
    }

    /// The index of `concepts` from the chunks of all of them.
    pub fn from_chunks<C: Borrow<Concept> + Sync>(
        chunks: Chunks,
        concepts: &[C],
        analyzer: &Analyzer,
    ) -> Result<Index, TextError> {
        Index::from_chunks_then(chunks, concepts, analyzer, &mut ())
    }

    /// [`Index::from_chunks`], telling `sink` (a cache file being written)
    /// the sizes of the BM25F postings before they are laid, to lay them in
    /// the room it gives, and handing it the per-field index and the tags as
    /// soon as they are made, while the BM25F index is still being laid out.
    pub fn from_chunks_then<C: Borrow<Concept> + Sync>(
        chunks: Chunks,
        concepts: &[C],
        analyzer: &Analyzer,
        sink: &mut impl BuildSink,
    ) -> Result<Index, TextError> {
        let n = concepts.len();
        if let Some(e) = chunks.0.iter().flatten().find_map(|c| c.error.clone()) {
            return Err(e);
        }
        let [mut a, mut b, mut c] = chunks.0;
        let (va, (vb, vc)) = rayon::join(
            || merge_vocab(&a, n),
            || rayon::join(|| merge_vocab(&b, n), || merge_vocab(&c, n)),
        );
        // The merged vocabularies hold the words now; the chunks keep only
        // their local ids' postings.
        for chunk in a.iter_mut().chain(&mut b).chain(&mut c) {
            chunk.drop_words();
        }
        // The BM25F index takes what it needs of the chunks first; then the
        // fields' postings are placed, each chunk dropped once placed, while
        // the BM25F lists are laid out from what it took.
        let prepared = bm25f::prepare(analyzer, n, [&mut a, &mut b, &mut c], [&va, &vb, &vc]);
        let mapped = sink.lists(prepared.sizes());
        let (bm25f, (fields, tags)) = rayon::join(
            || bm25f::finish(prepared, mapped),
            || {
                let ((title, tags), (tags_desc, body)) = rayon::join(
                    || rayon::join(|| merge_field(a, n, va), || tag_lists(concepts)),
                    || rayon::join(|| merge_field(b, n, vb), || merge_field(c, n, vc)),
                );
                let fields = [title, tags_desc, body];
                sink.fields_done(&fields, &tags);
                (fields, tags)
            },
        );
        Ok(Index {
            fields,
            bm25f,
            tags,
        })
    }
}

/// What a build tells a cache file being written as it builds
/// ([`Index::from_chunks_then`]); `()` is told nothing.
pub trait BuildSink: Send {
    /// Room for the BM25F lists' postings of `sizes` (docs/cache-format.md),
    /// or `None`: the heap.
    fn lists(&mut self, _sizes: bm25f::ListSizes) -> Option<bm25f::MappedLists> {
        None
    }

    /// The per-field index and the tags, made while the BM25F lists are
    /// still being laid out.
    fn fields_done(&mut self, _fields: &[FieldIndex; 3], _tags: &FxHashMap<String, Array<u32>>) {}
}

impl BuildSink for () {}

/// Word `w` of a vocabulary buffer (each word followed by `\n`) whose words
/// start at `starts`.
pub(super) fn vocab_word<'a>(vocab: &'a [u8], starts: &[u32], w: u32) -> &'a [u8] {
    &vocab[starts[w as usize] as usize..starts[w as usize + 1] as usize - 1]
}

impl FieldIndex {
    pub fn word_count(&self) -> usize {
        self.word_starts.len().saturating_sub(1)
    }

    /// The bytes of word `w` (without its separator).
    pub fn word(&self, w: u32) -> &[u8] {
        vocab_word(&self.vocab, &self.word_starts, w)
    }

    /// Ids of the distinct words that contain the folded term, ascending.
    pub fn words_containing(&self, folded_term: &[u8], out: &mut Vec<u32>) {
        out.clear();
        if folded_term.is_empty() {
            return;
        }
        if folded_term.len() >= 3 {
            self.trigrams
                .filter_into(folded_term, |w| self.word(w), out);
            return;
        }
        let finder = memchr::memmem::Finder::new(folded_term);
        let starts = &self.word_starts;
        let mut from = 0usize;
        let mut w = 0usize;
        while let Some(k) = finder.find(&self.vocab[from..]) {
            let off = (from + k) as u32;
            // Matches come in increasing order: gallop forward from the last
            // word instead of a binary search over the whole vocabulary.
            let mut step = 1;
            while w + step < starts.len() && starts[w + step] <= off {
                w += step;
                step *= 2;
            }
            w += starts[w..(w + step).min(starts.len())].partition_point(|&s| s <= off) - 1;
            out.push(w as u32);
            // One hit per word is enough: resume at the next word.
            from = starts[w + 1] as usize;
        }
    }

    /// The bitset of a dense word, `None` for a sparse one.
    pub fn dense(&self, word: u32) -> Option<&[u64]> {
        match self.dense_slot[word as usize] {
            NOT_DENSE => None,
            slot => {
                Some(&self.dense_bits[slot as usize * self.bitset_words..][..self.bitset_words])
            }
        }
    }

    /// Mark the concepts holding `word` in `bits`.
    pub fn mark(&self, word: u32, bits: &mut [u64]) {
        match self.dense(word) {
            Some(d) => bits.iter_mut().zip(d).for_each(|(x, y)| *x |= y),
            None => {
                for &p in self.postings(word) {
                    bits[p as usize >> 6] |= 1 << (p & 63);
                }
            }
        }
    }

    /// Postings of a sparse word (empty for a dense one).
    pub fn postings(&self, word: u32) -> &[u32] {
        let w = word as usize;
        &self.postings[self.post_starts[w] as usize..self.post_starts[w + 1] as usize]
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::text::analyze::Language;
    use crate::text::{contains_ci, fold};

    /// Concepts whose field `k` holds `term`, found through the index.
    pub(crate) fn found(ix: &Index, k: usize, term: &str, n: usize) -> Vec<u32> {
        let f = &ix.fields[k];
        let mut words = Vec::new();
        f.words_containing(fold(term).as_bytes(), &mut words);
        let mut bits = vec![0u64; n.div_ceil(64)];
        for &w in &words {
            f.mark(w, &mut bits);
        }
        (0..n as u32)
            .filter(|&p| bits[p as usize >> 6] >> (p & 63) & 1 == 1)
            .collect()
    }

    const SYLLABLES: [&str; 10] = ["ka", "Lo", "mi", "ße", "NU", "ro", "é", "ti", "zu", "a-b"];

    /// One to four random syllables.
    fn random_word(rng: &mut crate::testing::Rng) -> String {
        (0..1 + rng.below(4))
            .map(|_| SYLLABLES[rng.below(SYLLABLES.len())])
            .collect()
    }

    /// `n` concepts whose fields are a few random syllables each.
    fn random_concepts(n: usize, rng: &mut crate::testing::Rng) -> Vec<Concept> {
        let mut word = || random_word(rng);
        crate::testing::concepts_of((0..n).map(|_| {
            let (t, d, g, b1, b2) = (word(), word(), word(), word(), word());
            format!("---\ntype: t\ntitle: {t}\ndescription: {d} x\ntags: [{g}]\n---\n{b1} {b2}\n")
        }))
    }

    /// Indexes over one partition (a few concepts) and over many (past the
    /// threshold of [`partitions`]), built from several chunks, find exactly
    /// the concepts a scan of each field's text finds, for terms of every
    /// length (the memmem path and the trigram path).
    #[test]
    fn the_index_finds_what_a_scan_finds() {
        let mut rng = crate::testing::Rng(0x2545_F491_4F6C_DD1D);
        for n in [300usize, 5000] {
            let concepts = random_concepts(n, &mut rng);
            let mut word = || random_word(&mut rng);
            let ix = Index::build(&concepts, &Analyzer::new(Some(Language::English)));
            let texts = |c: &Concept| {
                [
                    c.title.clone().unwrap_or_default(),
                    format!(
                        "{} {}",
                        c.tags.join(" "),
                        c.description.clone().unwrap_or_default()
                    ),
                    c.body().unwrap().into_owned(),
                ]
            };
            let fields: Vec<[String; 3]> = concepts.iter().map(texts).collect();
            let mut terms: Vec<String> = SYLLABLES.iter().map(|s| s.to_string()).collect();
            terms.extend((0..40).map(|_| word()));
            terms.extend(["k", "AM", "zz", "ßen", "o"].map(String::from));
            for term in &terms {
                for (k, _) in FIELDS.iter().enumerate() {
                    let want: Vec<u32> = (0..n as u32)
                        .filter(|&p| contains_ci(&fields[p as usize][k], term))
                        .collect();
                    assert_eq!(
                        found(&ix, k, term, n),
                        want,
                        "{n} concepts, field {k}, {term:?}"
                    );
                }
            }
        }
    }

    /// More concepts than two chunks hold, built on one thread (two slices
    /// of them otherwise): the slices are cut at `CHUNK_MAX`, and a word of
    /// the last concepts is found at their positions, past what 16 bits
    /// count.
    #[test]
    fn slices_longer_than_a_chunk_holds_are_cut() {
        let n = 2 * build::CHUNK_MAX + 1000;
        let concepts = crate::testing::concepts_of((0..n).map(|i| {
            let word = if i >= n - 3 { "zebra" } else { "plain" };
            format!("---\ntype: t\ntitle: t{}\n---\n{word}\n", i % 7)
        }));
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let chunks = pool
            .install(|| chunk_fields(&concepts, 0, &Progress::default(), &Scratches::default()));
        assert_eq!(chunks.0[2].len(), 3);
        let ix =
            pool.install(|| Index::from_chunks(chunks, &concepts, &Analyzer::new(None)).unwrap());
        let last: Vec<u32> = (n as u32 - 3..n as u32).collect();
        assert_eq!(found(&ix, 2, "zebra", n), last);
        let zebra = ix
            .bm25f
            .token_id(&Analyzer::new(None).tokens("zebra")[0])
            .unwrap();
        assert_eq!(ix.bm25f.list(zebra).docs.to_vec(), last);
    }

    /// Once the BM25F index has taken what it needs of the chunks, their
    /// frequencies are gone (only it reads them): at scale they would
    /// otherwise be held through the build's largest moment.
    #[test]
    fn the_bm25f_build_frees_the_chunks_frequencies() {
        let mut rng = crate::testing::Rng(0x5851_F42D_4C95_7F2D);
        let concepts = random_concepts(3000, &mut rng);
        let n = concepts.len();
        let [mut a, mut b, mut c] =
            chunk_fields(&concepts, 0, &Progress::default(), &Scratches::default()).0;
        let had: usize = [&a, &b, &c]
            .iter()
            .flat_map(|f| f.iter())
            .map(|ch| ch.tfs.len())
            .sum();
        assert!(had > 0);
        let (va, vb, vc) = (merge_vocab(&a, n), merge_vocab(&b, n), merge_vocab(&c, n));
        let analyzer = Analyzer::new(Some(Language::English));
        bm25f::prepare(&analyzer, n, [&mut a, &mut b, &mut c], [&va, &vb, &vc]);
        for (k, field) in [&a, &b, &c].into_iter().enumerate() {
            for ch in field {
                assert!(ch.tfs.is_empty() && ch.tag_tfs.is_empty(), "field {k}");
                assert!(!ch.postings.is_empty(), "field {k}: postings kept");
            }
        }
    }

    /// However many threads build it — so however the slices fall and
    /// whichever thread takes which task from the queue — the index is the
    /// same, array for array: every field's chunks reach the merge in
    /// position order (the vocabulary is in order of first appearance, so a
    /// chunk out of place changes it).
    #[test]
    fn the_index_is_the_same_whatever_the_threads() {
        let mut rng = crate::testing::Rng(0x9E37_79B9_7F4A_7C15);
        let concepts = random_concepts(3000, &mut rng);
        let build = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| Index::build(&concepts, &Analyzer::new(Some(Language::English))))
        };
        let one = build(1);
        for threads in [2, 3, 7] {
            let ix = build(threads);
            for (k, (a, b)) in one.fields.iter().zip(&ix.fields).enumerate() {
                let at = format!("field {k}, {threads} threads");
                assert_eq!(&a.vocab[..], &b.vocab[..], "{at}");
                assert_eq!(&a.word_starts[..], &b.word_starts[..], "{at}");
                assert_eq!(&a.post_starts[..], &b.post_starts[..], "{at}");
                assert_eq!(&a.postings[..], &b.postings[..], "{at}");
                assert_eq!(&a.dense_slot[..], &b.dense_slot[..], "{at}");
                assert_eq!(&a.dense_bits[..], &b.dense_bits[..], "{at}");
                assert_eq!(&a.trigrams.keys[..], &b.trigrams.keys[..], "{at}");
                assert_eq!(&a.trigrams.words[..], &b.trigrams.words[..], "{at}");
            }
        }
    }
}
