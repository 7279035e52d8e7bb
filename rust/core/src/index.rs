//! The per-field index, built once per bundle snapshot.
//!
//! A query term never contains white space, so a term occurs in a field
//! exactly when it occurs inside one of the field's white-space-delimited
//! words (after folding, which maps white space to itself and nothing else to
//! white space). Each field therefore keeps its distinct folded words in one
//! `\n`-separated buffer (the vocabulary) with CSR postings of the concepts
//! that hold each word. A substring query is one SIMD `memmem` scan over the
//! vocabulary — far smaller than the corpus — and a union of postings.

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::concept::Concept;
use crate::text::{fold_into, is_ws};

/// The three scored fields of SPEC §3.2, with their weights.
pub const FIELDS: [(Field, u32); 3] = [(Field::Title, 3), (Field::TagsDesc, 2), (Field::Body, 1)];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Title,
    TagsDesc,
    Body,
}

impl Field {
    /// Apply `f` to each piece of the field's text (SPEC §3.2). White space
    /// between pieces only separates words, so `tags_desc` needs no joining.
    pub fn for_each_piece(self, c: &Concept, mut f: impl FnMut(&str)) {
        match self {
            Field::Title => f(c.title.as_deref().unwrap_or("")),
            Field::TagsDesc => {
                c.tags.iter().for_each(|t| f(t));
                f(c.description.as_deref().unwrap_or(""));
            }
            Field::Body => f(&c.body),
        }
    }

    /// The field's text as SPEC §3.2 spells it.
    pub fn text(self, c: &Concept) -> String {
        match self {
            Field::Title => c.title.clone().unwrap_or_default(),
            Field::TagsDesc => format!(
                "{} {}",
                c.tags.join(" "),
                c.description.as_deref().unwrap_or("")
            ),
            Field::Body => c.body.clone(),
        }
    }
}

#[derive(Default)]
pub struct FieldIndex {
    /// Distinct folded words, each followed by `\n`.
    pub vocab: Vec<u8>,
    /// Start of word `i` in `vocab`; one extra entry at the end.
    pub word_starts: Vec<u32>,
    /// Postings of word `i`: `postings[post_starts[i]..post_starts[i + 1]]`,
    /// ascending concept positions.
    pub post_starts: Vec<u64>,
    pub postings: Vec<u32>,
}

pub struct Index {
    pub fields: [FieldIndex; 3],
    /// Folded tag → ascending positions of the concepts that carry it.
    pub tags: FxHashMap<String, Vec<u32>>,
}

type ChunkMap = FxHashMap<Box<str>, Vec<u32>>;

/// Distinct folded words of one chunk of concepts, with their postings.
fn chunk_words(concepts: &[Concept], base: u32, field: Field) -> ChunkMap {
    let mut map: ChunkMap = FxHashMap::default();
    let mut buf = String::new();
    for (k, c) in concepts.iter().enumerate() {
        let pos = base + k as u32;
        field.for_each_piece(c, |piece| {
            for word in piece.split(is_ws).filter(|w| !w.is_empty()) {
                buf.clear();
                fold_into(word, &mut buf);
                match map.get_mut(buf.as_str()) {
                    Some(list) => {
                        if list.last() != Some(&pos) {
                            list.push(pos);
                        }
                    }
                    None => {
                        map.insert(buf.as_str().into(), vec![pos]);
                    }
                }
            }
        });
    }
    map
}

fn build_field(concepts: &[Concept], field: Field) -> FieldIndex {
    let threads = rayon::current_num_threads().max(1);
    let chunk = concepts.len().div_ceil(threads * 4).max(256);
    let maps: Vec<ChunkMap> = concepts
        .par_chunks(chunk)
        .enumerate()
        .map(|(i, part)| chunk_words(part, (i * chunk) as u32, field))
        .collect();
    // Merge in chunk order so each word's postings stay ascending.
    let mut ids: FxHashMap<&str, u32> = FxHashMap::default();
    let mut words: Vec<&str> = Vec::new();
    let mut counts: Vec<u64> = Vec::new();
    for m in &maps {
        for (w, list) in m {
            let id = *ids.entry(w).or_insert_with(|| {
                words.push(w);
                counts.push(0);
                (words.len() - 1) as u32
            });
            counts[id as usize] += list.len() as u64;
        }
    }
    let mut fi = FieldIndex::default();
    fi.vocab.reserve(words.iter().map(|w| w.len() + 1).sum());
    fi.word_starts.reserve(words.len() + 1);
    for w in &words {
        fi.word_starts.push(fi.vocab.len() as u32);
        fi.vocab.extend_from_slice(w.as_bytes());
        fi.vocab.push(b'\n');
    }
    fi.word_starts.push(fi.vocab.len() as u32);
    fi.post_starts.reserve(words.len() + 1);
    let mut acc = 0u64;
    for &n in &counts {
        fi.post_starts.push(acc);
        acc += n;
    }
    fi.post_starts.push(acc);
    fi.postings = vec![0; acc as usize];
    let mut cursor: Vec<u64> = fi.post_starts[..words.len()].to_vec();
    for m in &maps {
        for (w, list) in m {
            let id = ids[&**w] as usize;
            let at = cursor[id] as usize;
            fi.postings[at..at + list.len()].copy_from_slice(list);
            cursor[id] += list.len() as u64;
        }
    }
    fi
}

impl Index {
    pub fn build(concepts: &[Concept]) -> Index {
        let (title, (tags_desc, body)) = rayon::join(
            || build_field(concepts, Field::Title),
            || {
                rayon::join(
                    || build_field(concepts, Field::TagsDesc),
                    || build_field(concepts, Field::Body),
                )
            },
        );
        let mut tags: FxHashMap<String, Vec<u32>> = FxHashMap::default();
        for (pos, c) in concepts.iter().enumerate() {
            for t in &c.tags {
                let mut f = String::new();
                fold_into(t, &mut f);
                let list = tags.entry(f).or_default();
                if list.last() != Some(&(pos as u32)) {
                    list.push(pos as u32);
                }
            }
        }
        Index {
            fields: [title, tags_desc, body],
            tags,
        }
    }
}

impl FieldIndex {
    pub fn word_count(&self) -> usize {
        self.word_starts.len().saturating_sub(1)
    }

    /// Ids of the distinct words that contain the folded term, ascending.
    pub fn words_containing(&self, folded_term: &[u8], out: &mut Vec<u32>) {
        out.clear();
        if folded_term.is_empty() {
            return;
        }
        let finder = memchr::memmem::Finder::new(folded_term);
        let mut from = 0usize;
        while let Some(k) = finder.find(&self.vocab[from..]) {
            let off = from + k;
            let w = self.word_starts.partition_point(|&s| s as usize <= off) - 1;
            out.push(w as u32);
            // One hit per word is enough: resume at the next word.
            from = self.word_starts[w + 1] as usize;
        }
    }

    pub fn postings(&self, word: u32) -> &[u32] {
        let w = word as usize;
        &self.postings[self.post_starts[w] as usize..self.post_starts[w + 1] as usize]
    }
}
