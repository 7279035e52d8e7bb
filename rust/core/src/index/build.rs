//! Building the per-field index in parallel: chunks of concepts indexed on
//! their own, then merged field by field.

use std::borrow::Borrow;
use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::intern::{hash, Interner, Marked};
use super::scratch::{Scratch, Scratches};
use super::trigram::Trigrams;
use super::{vocab_word, Field, FieldIndex, FIELDS, NOT_DENSE};
use crate::array::Array;
use crate::concept::source::TextError;
use crate::concept::Concept;
use crate::progress::Progress;
use crate::text::{fold_into, for_each_folded_word};

/// One chunk of concepts indexed on its own: its distinct folded words and a
/// local CSR of their postings (ascending positions). Tokens are interned to
/// dense ids and appended to one flat pair list — one probe and sequential
/// writes per token; per-word vectors would cost a cache miss per token.
pub struct Chunk {
    pub(super) words: Interner<Marked>,
    pub(super) starts: Vec<u32>,
    /// The chunk's first position: its concepts are at most [`CHUNK_MAX`]
    /// consecutive positions from it.
    pub(super) base: u32,
    /// How many concepts it covers (fewer than it was given when a body
    /// could not be read back): every offset is below it.
    pub(super) concepts: usize,
    /// Each posting's position less `base`: two bytes instead of four for
    /// the largest array the chunks hold until the fields are merged.
    pub(super) postings: Vec<u16>,
    /// Beside each posting, how often the word occurs in that concept's
    /// field (for `tags_desc`, in its description), stopping at `u16::MAX`.
    pub(super) tfs: Vec<u16>,
    /// For `tags_desc` only (empty elsewhere), beside each posting, how often
    /// the word occurs in the concept's tags. Apart from `tfs`: the other
    /// fields' counts need no second half, and every chunk is held until
    /// the fields are merged, so two bytes a posting count at scale.
    pub(super) tag_tfs: Vec<u16>,
    /// Occurrences a capped count leaves out: (offset, local word, part of
    /// the field as `for_each_piece` numbers it, occurrences past
    /// `u16::MAX`). A length counts every token (docs/spec.md §12.1), so
    /// the BM25F build adds them back; hardly any text has them.
    pub(super) beyond: Vec<(u16, u32, u8, u32)>,
    /// A body that could not be read back: the chunk stopped there.
    pub(super) error: Option<TextError>,
}

/// The most concepts in one chunk: each posting's offset from the chunk's
/// first position fits in 16 bits.
pub(super) const CHUNK_MAX: usize = 1 << 16;

impl Chunk {
    /// Local word `w`'s positions, ascending.
    pub(super) fn positions(&self, w: usize) -> impl Iterator<Item = u32> + '_ {
        let base = self.base;
        self.postings[self.starts[w] as usize..self.starts[w + 1] as usize]
            .iter()
            .map(move |&o| base + u32::from(o))
    }

    /// Local word `w`'s postings as offsets from `base`, and beside each its
    /// count in the field (for `tags_desc`, in the description).
    pub(super) fn postings_and_tfs(&self, w: usize) -> (&[u16], &[u16]) {
        let range = self.starts[w] as usize..self.starts[w + 1] as usize;
        (&self.postings[range.clone()], &self.tfs[range])
    }

    /// Local word `w`'s postings with its counts: the field's (for
    /// `tags_desc`, the tags') and, for `tags_desc` only, the description's.
    #[inline]
    pub(super) fn halves(&self, w: usize) -> (&[u16], &[u16], Option<&[u16]>) {
        let (offsets, tfs) = self.postings_and_tfs(w);
        if self.tag_tfs.is_empty() {
            return (offsets, tfs, None);
        }
        let tags = &self.tag_tfs[self.starts[w] as usize..self.starts[w + 1] as usize];
        (offsets, tags, Some(tfs))
    }

    /// The count beside posting `p` (of all the chunk's), as
    /// [`Chunk::entries`] gives it.
    #[inline]
    pub(super) fn count_at(&self, p: usize) -> u32 {
        let hi = self.tag_tfs.get(p).map_or(0, |&t| u32::from(t) << 16);
        hi | u32::from(self.tfs[p])
    }

    /// Free the words, keeping the postings by local word id: once the
    /// field's vocabulary is merged (with this chunk's local → global ids)
    /// the words are not asked for again.
    pub(super) fn drop_words(&mut self) {
        self.words.release();
    }

    /// Free the frequencies (`tfs`, `tag_tfs`), keeping the postings:
    /// [`Chunk::entries`] is not asked for afterwards.
    pub(super) fn drop_frequencies(&mut self) {
        self.tfs = Vec::new();
        self.tag_tfs = Vec::new();
    }

    /// Local word `w`'s postings as offsets from `base`, each with its count
    /// in the field (for `tags_desc`: in the tags, high 16 bits, and in the
    /// description, low 16 bits).
    pub(super) fn entries(&self, w: usize) -> impl Iterator<Item = (u16, u32)> + '_ {
        let range = self.starts[w] as usize..self.starts[w + 1] as usize;
        let tags = self.tag_tfs.get(range.clone()).unwrap_or(&[]);
        self.postings[range.clone()]
            .iter()
            .zip(&self.tfs[range])
            .enumerate()
            .map(move |(i, (&o, &tf))| {
                let hi = tags.get(i).map_or(0, |&t| u32::from(t) << 16);
                (o, hi | u32::from(tf))
            })
    }
}

/// Where an occurrence in sub-field `sub` (tags 0 and description 1 of
/// `tags_desc`; 0 elsewhere) counts in a pair's count: the half of it that
/// one occurrence adds to (its lowest bit). Each half of `tags_desc` stops at
/// `u16::MAX` rather than carrying into the other ([`one_more`]).
fn count_unit(field: Field, sub: usize) -> u32 {
    if field == Field::TagsDesc && sub == 0 {
        1 << 16
    } else {
        1
    }
}

/// One more occurrence added to `tf` at `unit` ([`count_unit`]); `false`
/// when that half is full (the occurrence was not counted).
#[inline(always)]
fn one_more(tf: &mut u32, unit: u32) -> bool {
    let half = unit * 0xFFFF;
    if *tf & half == half {
        return false;
    }
    *tf += unit;
    true
}

/// Records an occurrence a capped count left out (`Chunk::beyond`): out of
/// the scan's loop, which almost never comes here.
#[cold]
#[inline(never)]
fn left_out(beyond: &mut FxHashMap<(u16, u32, u8), u32>, k: usize, w: usize, sub: usize) {
    // `k` is below CHUNK_MAX (`chunk_words` asserts it).
    *beyond.entry((k as u16, w as u32, sub as u8)).or_default() += 1;
}

/// The chunk of field `field` of `concepts` (at most [`CHUNK_MAX`]), at
/// positions from `base` on, built in `scratch`'s buffers.
pub fn chunk_words<C: Borrow<Concept>>(
    concepts: &[C],
    base: u32,
    field: Field,
    progress: &Progress,
    scratch: &mut Scratch,
) -> Chunk {
    assert!(concepts.len() <= CHUNK_MAX, "a chunk's offsets fit 16 bits");
    let Scratch {
        pair_word,
        pair_tf,
        ends,
        cursor,
        buf,
        words_seen,
    } = scratch;
    let seen = &mut words_seen[field as usize];
    let mut words: Interner<Marked> = Interner::with_table(*seen);
    pair_word.clear();
    pair_tf.clear();
    ends.clear();
    let mut beyond: FxHashMap<(u16, u32, u8), u32> = FxHashMap::default();
    let mut error = None;
    for (k, c) in concepts.iter().enumerate() {
        // A cancelled load throws the index away: stop adding to it.
        if k % 1024 == 0 && progress.cancelled() {
            break;
        }
        // A word's mark is its last pair's index + 1 (0: none yet); its
        // pair is this concept's when that index is not below the
        // concept's first pair's, as pairs are added concept by concept.
        let first = pair_word.len() as u32;
        let read = field.for_each_piece(c.borrow(), |sub, piece| {
            let unit = count_unit(field, sub);
            for_each_folded_word(piece, buf, |w| {
                let (id, mark) = words.intern_marked(w);
                if *mark <= first {
                    pair_word.push(id);
                    pair_tf.push(0);
                    *mark = pair_word.len() as u32;
                }
                let at = *mark as usize - 1;
                if !one_more(&mut pair_tf[at], unit) {
                    left_out(&mut beyond, k, id as usize, sub);
                }
            });
        });
        if let Err(e) = read {
            error = Some(e);
            break;
        }
        ends.push(pair_word.len());
    }
    *seen = words.len();
    // Only read from now on: its table is dead weight.
    words.freeze();
    // A concept cut short (its body unreadable) adds no pairs.
    pair_word.truncate(ends.last().copied().unwrap_or(0));
    pair_tf.truncate(pair_word.len());
    // Counting sort of the pairs by word; positions stay ascending.
    let mut starts = vec![0u32; words.len() + 1];
    for &w in pair_word.iter() {
        starts[w as usize + 1] += 1;
    }
    for i in 1..starts.len() {
        starts[i] += starts[i - 1];
    }
    cursor.clear();
    cursor.extend_from_slice(&starts);
    let mut postings = vec![0u16; pair_word.len()];
    let mut tfs = vec![0u16; pair_word.len()];
    let halves = field == Field::TagsDesc;
    let mut tag_tfs = vec![0u16; if halves { pair_word.len() } else { 0 }];
    let mut from = 0;
    for (k, &end) in ends.iter().enumerate() {
        // Below CHUNK_MAX (asserted above).
        let offset = k as u16;
        for (&w, &tf) in pair_word[from..end].iter().zip(&pair_tf[from..end]) {
            let at = cursor[w as usize] as usize;
            postings[at] = offset;
            // `one_more` keeps each half below 2^16.
            tfs[at] = tf as u16;
            if halves {
                tag_tfs[at] = (tf >> 16) as u16;
            }
            cursor[w as usize] += 1;
        }
        from = end;
    }
    Chunk {
        words,
        starts,
        base,
        concepts: ends.len(),
        postings,
        tfs,
        tag_tfs,
        // A concept cut short adds nothing.
        beyond: beyond
            .into_iter()
            .filter(|&((k, _, _), _)| usize::from(k) < ends.len())
            .map(|((k, w, sub), n)| (k, w, sub, n))
            .collect(),
        error,
    }
}

/// The chunks of all three fields for the concepts at positions
/// `base..base + concepts.len()`, in parallel slices. Every (field, slice)
/// is one task of one queue that each of the pool's threads takes from until
/// it is empty, longest first (the body's slices, then the tags and
/// descriptions, then the titles): a thread that comes late (the pool's other
/// thread is writing the cache file's texts meanwhile) takes the next task,
/// and the last to start are the shortest, so no thread waits long at the end
/// while another finishes a body slice. Work stealing over a split range
/// (a parallel iterator) could leave one thread with the last two body
/// slices and the other idle.
pub fn chunk_fields<C: Borrow<Concept> + Sync>(
    concepts: &[C],
    base: u32,
    progress: &Progress,
    scratches: &Scratches,
) -> Chunks {
    let threads = rayon::current_num_threads().max(1);
    let size = concepts.len().div_ceil(threads * 2).clamp(256, CHUNK_MAX);
    let slices = concepts.len().div_ceil(size);
    let tasks: Vec<(usize, usize)> = [2usize, 1, 0]
        .iter()
        .flat_map(|&k| (0..slices).map(move |i| (k, i)))
        .collect();
    let next = AtomicUsize::new(0);
    let per_thread: Vec<Vec<(usize, Chunk)>> = (0..threads)
        .into_par_iter()
        .with_max_len(1)
        .map(|_| {
            let mut mine = Vec::new();
            let mut scratch = scratches.take();
            loop {
                let t = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(k, i)) = tasks.get(t) else { break };
                let part = &concepts[i * size..((i + 1) * size).min(concepts.len())];
                let at = base + (i * size) as u32;
                let chunk = chunk_words(part, at, FIELDS[k].0, progress, &mut scratch);
                mine.push((t, chunk));
            }
            scratches.put(scratch);
            mine
        })
        .collect();
    let mut done: Vec<(usize, Chunk)> = per_thread.into_iter().flatten().collect();
    // Each field's slices in position order, as the tasks were listed.
    done.sort_unstable_by_key(|&(t, _)| t);
    let mut out = Chunks::default();
    for (t, chunk) in done {
        out.0[tasks[t].0].push(chunk);
    }
    out
}

/// Per field, its chunks in position order.
#[derive(Default)]
pub struct Chunks(pub [Vec<Chunk>; 3]);

impl Chunks {
    pub fn append(&mut self, more: Chunks) {
        for (a, b) in self.0.iter_mut().zip(more.0) {
            a.extend(b);
        }
    }
}

/// A field's merged vocabulary: its distinct words (each followed by `\n`),
/// where each starts (one extra entry at the end), and each chunk's local →
/// global word ids.
pub struct Vocab {
    pub vocab: Vec<u8>,
    pub word_starts: Vec<u32>,
    pub remaps: Vec<Vec<u32>>,
}

impl Vocab {
    pub fn word_count(&self) -> usize {
        self.word_starts.len() - 1
    }

    pub fn word(&self, w: u32) -> &[u8] {
        vocab_word(&self.vocab, &self.word_starts, w)
    }
}

/// A field's vocabulary from its chunks (in position order) over `n` concepts.
pub fn merge_vocab(chunks: &[Chunk], n: usize) -> Vocab {
    let (vocab, word_starts, remaps) = merge_words(chunks, n);
    Vocab {
        vocab,
        word_starts,
        remaps,
    }
}

/// One field's index from its chunks (in position order) over `n` concepts
/// and its merged vocabulary, both taken (the BM25F build has read what it
/// needs of them): the vocabulary's words become the index's, not a copy,
/// and each chunk is dropped once its postings are placed, so a large load
/// does not hold every chunk until the end.
pub fn merge_field(chunks: Vec<Chunk>, n: usize, v: Vocab) -> FieldIndex {
    let Vocab {
        vocab,
        word_starts,
        remaps,
    } = v;
    let remaps = &remaps;
    let n_words = word_starts.len() - 1;
    let mut counts = vec![0u64; n_words];
    for (ch, remap) in chunks.iter().zip(remaps) {
        for (w, &g) in remap.iter().enumerate() {
            counts[g as usize] += u64::from(ch.starts[w + 1] - ch.starts[w]);
        }
    }
    let bitset_words = n.div_ceil(64);
    let word = |w: u32| vocab_word(&vocab, &word_starts, w);
    // The trigram lists and the postings are independent: build both at once.
    let (trigrams, (dense_slot, dense_bits, post_starts, postings)) = rayon::join(
        || Trigrams::build(n_words, word),
        || place(chunks, remaps, &counts, bitset_words),
    );
    FieldIndex {
        vocab: vocab.into(),
        word_starts: word_starts.into(),
        post_starts: post_starts.into(),
        postings: postings.into(),
        dense_slot: dense_slot.into(),
        dense_bits: dense_bits.into(),
        bitset_words,
        trigrams,
    }
}

/// Partitions of the vocabulary interned apart (and in parallel) when a
/// field is merged: each partition's lookup table is a fraction of the whole,
/// so it stays in cache. The count depends only on the data (never on the
/// thread count), so the vocabulary's order — and the cache file — is the
/// same on every machine.
fn partitions(concepts: usize) -> usize {
    if concepts < 4096 {
        1
    } else {
        16
    }
}

/// The field's vocabulary from its chunks' words: the buffer of distinct
/// words (each followed by `\n`), where each starts (one extra entry at the
/// end), and each chunk's local → global word ids.
///
/// Words are split into [`partitions`] by their hash and each partition is
/// interned on its own, in chunk order; the vocabulary is the partitions one
/// after another, each in order of first appearance.
fn merge_words(chunks: &[Chunk], n: usize) -> (Vec<u8>, Vec<u32>, Vec<Vec<u32>>) {
    let parts = partitions(n);
    // Middle bits: the tables index by the low bits and tag by the top ones.
    let part_of = |h: u64| ((h >> 32) as usize) & (parts - 1);
    // Per chunk, per partition: the chunk's words that fall in it (local id
    // and hash), in the chunk's order. Sorted once, so each partition reads
    // only its own words.
    let buckets: Vec<Vec<Vec<(u32, u64)>>> = chunks
        .par_iter()
        .map(|ch| {
            let mut by_part = vec![Vec::new(); parts];
            for w in 0..ch.words.len() as u32 {
                let h = hash(ch.words.word(w));
                by_part[part_of(h)].push((w, h));
            }
            by_part
        })
        .collect();
    let largest = chunks.iter().map(|c| c.words.len()).max().unwrap_or(0);
    let bytes = chunks
        .iter()
        .map(|c| c.words.arena.len())
        .max()
        .unwrap_or(0);
    // Per partition: its interner, and per chunk the ids of the chunk's words
    // in that partition (in bucket order).
    let interned: Vec<(Interner, Vec<Vec<u32>>)> = (0..parts)
        .into_par_iter()
        .map(|p| {
            let mut it = Interner::with_capacity(largest * 2 / parts, bytes * 2 / parts);
            let ids = chunks
                .iter()
                .zip(&buckets)
                .map(|(ch, by_part)| {
                    by_part[p]
                        .iter()
                        .map(|&(w, h)| it.intern_hashed(ch.words.word(w), h).0)
                        .collect()
                })
                .collect();
            (it, ids)
        })
        .collect();
    let mut base = Vec::with_capacity(parts);
    let mut n_words = 0u32;
    for (it, _) in &interned {
        base.push(n_words);
        n_words += it.len() as u32;
    }
    let remaps: Vec<Vec<u32>> = buckets
        .par_iter()
        .enumerate()
        .map(|(c, by_part)| {
            let mut remap = vec![0u32; chunks[c].words.len()];
            for (p, bucket) in by_part.iter().enumerate() {
                for (&(w, _), &id) in bucket.iter().zip(&interned[p].1[c]) {
                    remap[w as usize] = base[p] + id;
                }
            }
            remap
        })
        .collect();
    let total: usize = interned.iter().map(|(it, _)| it.arena.len()).sum();
    let mut vocab = Vec::with_capacity(total + n_words as usize);
    let mut word_starts = Vec::with_capacity(n_words as usize + 1);
    for (it, _) in &interned {
        for w in 0..it.len() as u32 {
            word_starts.push(vocab.len() as u32);
            vocab.extend_from_slice(it.word(w));
            vocab.push(b'\n');
        }
    }
    word_starts.push(vocab.len() as u32);
    (vocab, word_starts, remaps)
}

/// Postings and dense bitsets of a field: `counts[g]` concepts hold global
/// word `g`; each chunk's words map to global ids through its `remap`.
#[allow(clippy::type_complexity)]
fn place(
    chunks: Vec<Chunk>,
    remaps: &[Vec<u32>],
    counts: &[u64],
    bitset_words: usize,
) -> (Vec<u32>, Vec<u64>, Vec<u64>, Vec<u32>) {
    let n_words = counts.len();
    // A bitset costs 8·bitset_words bytes, a postings list 4·count.
    let mut slots = 0u32;
    let dense_slot: Vec<u32> = counts
        .iter()
        .map(|&c| {
            if c > 2 * bitset_words as u64 {
                slots += 1;
                slots - 1
            } else {
                NOT_DENSE
            }
        })
        .collect();
    let mut dense_bits = vec![0u64; slots as usize * bitset_words];
    let mut post_starts = Vec::with_capacity(n_words + 1);
    let mut acc = 0u64;
    for (w, &n) in counts.iter().enumerate() {
        post_starts.push(acc);
        if dense_slot[w] == NOT_DENSE {
            acc += n;
        }
    }
    post_starts.push(acc);
    let mut postings = vec![0u32; acc as usize];
    // Chunks in order: each word's postings come out ascending.
    let mut cursor: Vec<u64> = post_starts[..n_words].to_vec();
    for (ch, remap) in chunks.into_iter().zip(remaps) {
        for (w, &g) in remap.iter().enumerate() {
            let list = ch.positions(w);
            let g = g as usize;
            match dense_slot[g] {
                NOT_DENSE => {
                    let at = cursor[g] as usize;
                    let len = (ch.starts[w + 1] - ch.starts[w]) as usize;
                    for (out, p) in postings[at..at + len].iter_mut().zip(list) {
                        *out = p;
                    }
                    cursor[g] += len as u64;
                }
                slot => {
                    let bits = &mut dense_bits[slot as usize * bitset_words..][..bitset_words];
                    for p in list {
                        bits[p as usize >> 6] |= 1 << (p & 63);
                    }
                }
            }
        }
    }
    (dense_slot, dense_bits, post_starts, postings)
}

/// Folded tag → ascending positions of the concepts that carry it.
pub(super) fn tag_lists<C: Borrow<Concept>>(concepts: &[C]) -> FxHashMap<String, Array<u32>> {
    let mut tags: FxHashMap<String, Vec<u32>> = FxHashMap::default();
    for (pos, c) in concepts.iter().enumerate() {
        for t in &c.borrow().tags {
            let mut f = String::new();
            fold_into(t, &mut f);
            let list = tags.entry(f).or_default();
            if list.last() != Some(&(pos as u32)) {
                list.push(pos as u32);
            }
        }
    }
    tags.into_iter().map(|(t, l)| (t, l.into())).collect()
}
