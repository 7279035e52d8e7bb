//! Splicing an index (docs/spec.md §9.4): the index of a snapshot that
//! differs from an indexed one in a few concepts (read again, added or
//! removed), made from the old index and a small index of the concepts read
//! again or added, instead of indexing every concept again. Every list of
//! the old index loses the concepts that went away, the others are
//! renumbered (an added or removed concept shifts the positions after it),
//! and the small index's lists are merged in.
//!
//! Every lookup then answers what a build over the new concepts answers: a
//! field's word, a tag or a BM25F token left with no concept is dropped, as
//! a build never lists one (the weighted count adds a term's weight to its
//! bound for every field where some word matches, §3.2, so an empty word
//! would not be harmless). Only the order of a field's words differs from a
//! build's: the old words keep theirs, the new ones come after.

use std::borrow::Borrow;

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::trigram::Trigrams;
use super::{bm25f, FieldIndex, Index, NOT_DENSE};
use crate::array::Array;
use crate::concept::source::TextError;
use crate::concept::Concept;
use crate::progress::Progress;
use crate::text::analyze::Analyzer;

/// No position: a concept that went away, a word or token missing on one side.
pub const GONE: u32 = u32::MAX;

/// Where the concepts of the new snapshot come from.
pub struct Remap<'a> {
    /// Per old position, the concept's new position, or [`GONE`] when it was
    /// removed or read again.
    pub old_to_new: &'a [u32],
    /// Per concept read again or added (the small index's positions), its
    /// new position; ascending.
    pub fresh_at: &'a [u32],
}

impl Remap<'_> {
    /// The new position of old position `p`, when its concept is kept (a
    /// position past the old concepts, which only a damaged saved index could
    /// hold, is none: a search skips it too, §9.3).
    pub fn old(&self, p: u32) -> Option<u32> {
        self.old_to_new
            .get(p as usize)
            .copied()
            .filter(|&q| q != GONE)
    }
}

impl Index {
    /// The index of `n` concepts: those `old` indexes that `map` keeps, at
    /// their new positions, and `fresh` (read again or added) at
    /// `map.fresh_at`. An error when a body of `fresh` cannot be read.
    pub fn splice<C: Borrow<Concept> + Sync>(
        old: &Index,
        map: &Remap<'_>,
        fresh: &[C],
        n: usize,
        analyzer: &Analyzer,
    ) -> Result<Index, TextError> {
        let small = Index::build_with(fresh, analyzer, &Progress::default())?;
        let field = |k: usize| splice_field(&old.fields[k], &small.fields[k], map, n);
        let ((title, (tags_desc, body)), (bm25f, tags)) = rayon::join(
            || rayon::join(|| field(0), || rayon::join(|| field(1), || field(2))),
            || {
                rayon::join(
                    || bm25f::splice(&old.bm25f, &small.bm25f, map, n),
                    || splice_tags(&old.tags, &small.tags, map),
                )
            },
        );
        Ok(Index {
            fields: [title, tags_desc, body],
            bm25f,
            tags,
        })
    }
}

/// Each tag's concepts: the old ones kept, renumbered, and the fresh ones.
fn splice_tags(
    old: &FxHashMap<String, Array<u32>>,
    small: &FxHashMap<String, Array<u32>>,
    map: &Remap<'_>,
) -> FxHashMap<String, Array<u32>> {
    let mut out = FxHashMap::default();
    let mut list = Vec::new();
    for (tag, kept) in old {
        list.clear();
        let renumbered = kept.iter().filter_map(|&p| map.old(p));
        let fresh = small.get(tag).map_or(&[][..], |l| &l[..]);
        merge_into(renumbered, fresh, map, &mut list);
        if !list.is_empty() {
            out.insert(tag.clone(), list.clone().into());
        }
    }
    for (tag, fresh) in small {
        if !old.contains_key(tag) {
            let placed: Vec<u32> = fresh.iter().map(|&s| map.fresh_at[s as usize]).collect();
            out.insert(tag.clone(), placed.into());
        }
    }
    out
}

/// `kept` (new positions, ascending) and the small index's positions
/// `fresh` placed, in position order, appended to `out`. No concept is on
/// both sides: one read again is gone from the old.
fn merge_into(kept: impl Iterator<Item = u32>, fresh: &[u32], map: &Remap<'_>, out: &mut Vec<u32>) {
    let mut fresh = fresh.iter().map(|&s| map.fresh_at[s as usize]).peekable();
    for p in kept {
        while let Some(q) = fresh.next_if(|&q| q < p) {
            out.push(q);
        }
        out.push(p);
    }
    out.extend(fresh);
}

/// Words of the old vocabulary handled per task.
const PART: usize = 4096;

/// One task's share of a field: the old words still held by some concept,
/// and their lists (new positions) end to end.
#[derive(Default)]
struct Part {
    words: Vec<u32>,
    ends: Vec<usize>,
    postings: Vec<u32>,
}

/// One field of the new index: `old`'s words with their lists spliced, then
/// the words only `small` has.
fn splice_field(old: &FieldIndex, small: &FieldIndex, map: &Remap<'_>, n: usize) -> FieldIndex {
    // Old words too short for a trigram, found by a pass over their starts.
    let short: FxHashMap<&[u8], u32> = (0..old.word_count() as u32)
        .filter(|&w| old.word_starts[w as usize + 1] - old.word_starts[w as usize] < 4)
        .map(|w| (old.word(w), w))
        .collect();
    let in_old: Vec<u32> = (0..small.word_count() as u32)
        .into_par_iter()
        .map(|s| find_word(old, small.word(s), &short))
        .collect();
    let mut by_old: Vec<(u32, u32)> = (0..small.word_count() as u32)
        .filter(|&s| in_old[s as usize] != GONE)
        .map(|s| (in_old[s as usize], s))
        .collect();
    by_old.sort_unstable();
    let n_old = old.word_count();
    let parts: Vec<Part> = (0..n_old.div_ceil(PART))
        .into_par_iter()
        .map(|k| {
            let words = k * PART..((k + 1) * PART).min(n_old);
            let mut at = by_old.partition_point(|&(o, _)| (o as usize) < words.start);
            let mut part = Part::default();
            let mut kept = Vec::new();
            for w in words {
                kept.clear();
                old_list(old, w as u32, map, &mut kept);
                let from = part.postings.len();
                let fresh = match by_old.get(at) {
                    Some(&(o, s)) if o as usize == w => {
                        at += 1;
                        list_of(small, s)
                    }
                    _ => Vec::new(),
                };
                merge_into(kept.iter().copied(), &fresh, map, &mut part.postings);
                if part.postings.len() > from {
                    part.words.push(w as u32);
                    part.ends.push(part.postings.len());
                }
            }
            part
        })
        .collect();
    let added: Vec<u32> = (0..small.word_count() as u32)
        .filter(|&s| in_old[s as usize] == GONE)
        .collect();
    let kept_words: usize = parts.iter().map(|p| p.words.len()).sum();
    let (vocab, word_starts, trigrams) = if added.is_empty() && kept_words == n_old {
        // The same words in the same order: the old vocabulary serves as is.
        (
            old.vocab.clone(),
            old.word_starts.clone(),
            Trigrams {
                keys: old.trigrams.keys.clone(),
                starts: old.trigrams.starts.clone(),
                words: old.trigrams.words.clone(),
            },
        )
    } else {
        new_vocab(old, small, &parts, &added)
    };
    // The lists in the new words' order, then placed as a build places them.
    let mut lists: Vec<&[u32]> = Vec::with_capacity(kept_words + added.len());
    for p in &parts {
        let mut from = 0;
        for &end in &p.ends {
            lists.push(&p.postings[from..end]);
            from = end;
        }
    }
    let fresh: Vec<Vec<u32>> = added
        .iter()
        .map(|&s| {
            let l = list_of(small, s);
            l.iter().map(|&x| map.fresh_at[x as usize]).collect()
        })
        .collect();
    lists.extend(fresh.iter().map(Vec::as_slice));
    let bitset_words = n.div_ceil(64);
    let (dense_slot, dense_bits, post_starts, postings) = place(&lists, bitset_words);
    FieldIndex {
        vocab,
        word_starts,
        post_starts: post_starts.into(),
        postings: postings.into(),
        dense_slot: dense_slot.into(),
        dense_bits: dense_bits.into(),
        bitset_words,
        trigrams,
    }
}

/// The old word spelled `word`, or [`GONE`]: a word of three bytes or more
/// is among those holding its rarest trigrams, a shorter one in `short`.
fn find_word(old: &FieldIndex, word: &[u8], short: &FxHashMap<&[u8], u32>) -> u32 {
    if word.len() < 3 {
        return short.get(word).copied().unwrap_or(GONE);
    }
    let mut out = Vec::new();
    old.trigrams.filter_into(word, |w| old.word(w), &mut out);
    out.into_iter()
        .find(|&w| old.word(w) == word)
        .unwrap_or(GONE)
}

/// Old word `w`'s concepts still there, at their new positions (ascending:
/// the renumbering keeps the order), appended to `out`.
fn old_list(old: &FieldIndex, w: u32, map: &Remap<'_>, out: &mut Vec<u32>) {
    match old.dense(w) {
        Some(bits) => {
            for (x, &word) in bits.iter().enumerate() {
                let mut b = word;
                while b != 0 {
                    let p = (x * 64) as u32 + b.trailing_zeros();
                    b &= b - 1;
                    out.extend(map.old(p));
                }
            }
        }
        None => out.extend(old.postings(w).iter().filter_map(|&p| map.old(p))),
    }
}

/// The small index's positions holding word `s`.
fn list_of(small: &FieldIndex, s: u32) -> Vec<u32> {
    let mut out = Vec::new();
    match small.dense(s) {
        Some(bits) => {
            for (x, &word) in bits.iter().enumerate() {
                let mut b = word;
                while b != 0 {
                    out.push((x * 64) as u32 + b.trailing_zeros());
                    b &= b - 1;
                }
            }
        }
        None => out.extend_from_slice(small.postings(s)),
    }
    out
}

/// The new vocabulary: the old words kept (in their order), then the added
/// ones; and its trigram lists, the old ones renumbered with the added
/// words' appended (their ids come after every old one, so each list stays
/// ascending).
fn new_vocab(
    old: &FieldIndex,
    small: &FieldIndex,
    parts: &[Part],
    added: &[u32],
) -> (Array<u8>, Array<u32>, Trigrams) {
    let mut new_id = vec![GONE; old.word_count()];
    let mut vocab = Vec::with_capacity(old.vocab.len());
    let mut starts = Vec::new();
    let mut id = 0u32;
    for &w in parts.iter().flat_map(|p| &p.words) {
        new_id[w as usize] = id;
        id += 1;
        starts.push(vocab.len() as u32);
        vocab.extend_from_slice(old.word(w));
        vocab.push(b'\n');
    }
    let base = id;
    let added_words: Vec<&[u8]> = added.iter().map(|&s| small.word(s)).collect();
    for w in &added_words {
        starts.push(vocab.len() as u32);
        vocab.extend_from_slice(w);
        vocab.push(b'\n');
    }
    starts.push(vocab.len() as u32);
    let more = Trigrams::build(added_words.len(), |w| added_words[w as usize]);
    let trigrams = splice_trigrams(&old.trigrams, &new_id, &more, base);
    (vocab.into(), starts.into(), trigrams)
}

/// Key `i`'s list of words.
fn key_list(t: &Trigrams, i: usize) -> &[u32] {
    &t.words[t.starts[i] as usize..t.starts[i + 1] as usize]
}

/// Trigram lists over the new vocabulary: `old`'s with each word renumbered
/// by `new_id` (a dropped word left out), then `more`'s (over the added
/// words, numbered from `base`). A key left with no word is dropped.
fn splice_trigrams(old: &Trigrams, new_id: &[u32], more: &Trigrams, base: u32) -> Trigrams {
    let mut keys = Vec::with_capacity(old.keys.len() + more.keys.len());
    let mut starts = Vec::with_capacity(keys.capacity() + 1);
    let mut words = Vec::with_capacity(old.words.len());
    let (mut i, mut j) = (0usize, 0usize);
    while i < old.keys.len() || j < more.keys.len() {
        let a = old.keys.get(i).copied().unwrap_or(u32::MAX);
        let b = more.keys.get(j).copied().unwrap_or(u32::MAX);
        let from = words.len();
        let key = a.min(b);
        if a == key && i < old.keys.len() {
            let renumbered = key_list(old, i).iter().map(|&w| new_id[w as usize]);
            words.extend(renumbered.filter(|&w| w != GONE));
            i += 1;
        }
        if b == key && j < more.keys.len() {
            words.extend(key_list(more, j).iter().map(|&w| base + w));
            j += 1;
        }
        if words.len() > from {
            keys.push(key);
            starts.push(from as u32);
        }
    }
    starts.push(words.len() as u32);
    Trigrams {
        keys: keys.into(),
        starts: starts.into(),
        words: words.into(),
    }
}

/// Postings and dense bitsets of a field's lists, laid out as a build lays
/// them out: a list held by more than one concept in 32 as a bitset.
#[allow(clippy::type_complexity)]
fn place(lists: &[&[u32]], bitset_words: usize) -> (Vec<u32>, Vec<u64>, Vec<u64>, Vec<u32>) {
    let mut dense_slot = Vec::with_capacity(lists.len());
    let mut post_starts = Vec::with_capacity(lists.len() + 1);
    let mut postings = Vec::new();
    let mut dense_bits = Vec::new();
    let mut slots = 0u32;
    for list in lists {
        post_starts.push(postings.len() as u64);
        if list.len() as u64 > 2 * bitset_words as u64 {
            dense_slot.push(slots);
            slots += 1;
            let at = dense_bits.len();
            dense_bits.resize(at + bitset_words, 0u64);
            for &p in *list {
                dense_bits[at + (p as usize >> 6)] |= 1 << (p & 63);
            }
        } else {
            dense_slot.push(NOT_DENSE);
            postings.extend_from_slice(list);
        }
    }
    post_starts.push(postings.len() as u64);
    (dense_slot, dense_bits, post_starts, postings)
}

#[cfg(test)]
mod tests;
