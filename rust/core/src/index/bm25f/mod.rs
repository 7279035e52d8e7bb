//! The BM25F index (docs/spec.md §12): per token, the concepts that hold it
//! in any field, each with its four field frequencies side by side (one
//! cursor per token at search time), each concept's four field lengths, and
//! per token and field the largest frequency and smallest length, the bounds
//! dynamic pruning needs, and the same bounds per block of [`BLOCK`] entries
//! of the longer lists (block-max pruning).
//! Built in `build.rs`; checked here when read back from a cache file.

mod build;
mod lay;
mod list;
mod lookup;
mod offsets;
mod postings;
mod runs;
mod share;
mod splice;

pub use build::{finish, prepare, Prepared};
pub use list::{tfs_of, TokenList, Words};
pub use offsets::{DocIter, Docs};
pub use postings::{ListSizes, ListsLayout, MappedLists};
pub use splice::splice;

use crate::array::Array;
use crate::text::analyze::Language;

use super::vocab_word;

/// The BM25F fields, in the order of every sum over fields (docs/spec.md §12.3).
pub const BM25F_FIELDS: [&str; 4] = ["title", "tags", "description", "body"];

#[derive(Default)]
pub struct Bm25fIndex {
    /// The analyzer's language (`None`: tokens are not stemmed).
    pub language: Option<Language>,
    /// The distinct tokens in byte order, each followed by `\n`; token `t`
    /// starts at `token_starts[t]` (one extra entry at the end).
    pub vocab: Array<u8>,
    pub token_starts: Array<u32>,
    /// Token `t`'s entries are `starts[t]..starts[t + 1]` (their number is
    /// its document frequency): its concepts, ascending, as offsets
    /// `near[starts[t]..starts[t + 1]]` from its first concept `firsts[t]`
    /// and its blocks' last concepts (list.rs), or for a far token whole in
    /// `far_docs`; its last concept is `lasts[t]`. Entry `g` of them with its
    /// frequencies in the fields title, tags, description, body in one byte
    /// `body[g]` or, for a head entry, in a word of `head_words`, found with
    /// `head_dir` (list.rs) — for a token whose frequencies are all below
    /// [`WIDE`] (nearly every one). The others are wide tokens: their
    /// frequencies (each at most `u16::MAX`) are in `wide_tfs`, and their
    /// bytes and words hold them clamped to 255.
    pub starts: Array<u64>,
    pub near: Array<u16>,
    pub firsts: Array<u32>,
    pub lasts: Array<u32>,
    /// The far tokens, ascending; the `i`-th one's concepts are
    /// `far_docs[far_starts[i]..far_starts[i + 1]]`.
    pub far_tokens: Array<u32>,
    pub far_starts: Array<u64>,
    pub far_docs: Array<u32>,
    pub body: Array<u8>,
    pub head_dir: Array<u64>,
    pub head_words: Array<u32>,
    /// The wide tokens, ascending; the `i`-th one's frequencies are
    /// `wide_tfs[4 * wide_starts[i]..4 * wide_starts[i + 1]]`, four per
    /// concept of its list.
    pub wide_tokens: Array<u32>,
    pub wide_starts: Array<u64>,
    pub wide_tfs: Array<u16>,
    /// The concepts' field lengths, in tokens, field by field: concept `d`'s
    /// length in field `f` is `lengths[f * n + d]` for `n` concepts. Field by
    /// field rather than concept by concept: a search reads the body length
    /// of concepts far apart, nearly always that one alone, and a quarter of
    /// the bytes stays in the CPU's caches four times as well.
    pub lengths: Array<u32>,
    /// Each field's total length (the sum of its lengths).
    pub totals: [u64; 4],
    /// Per token and field: the largest frequency, and the smallest length
    /// of a concept holding the token there (`u32::MAX` when none does), at
    /// `4t + f`.
    pub max_tf: Array<u16>,
    pub min_len: Array<u32>,
    /// The tokens whose lists are longer than [`BLOCK`], ascending; the
    /// `i`-th one's list is cut into blocks of [`BLOCK`] entries (the last
    /// one shorter), `block_starts[i]..block_starts[i + 1]`, each with its
    /// last position and, at `4j + f`, the bounds of `max_tf` and `min_len`
    /// over its entries. A shorter list is one block (the token's bounds).
    pub long_tokens: Array<u32>,
    pub block_starts: Array<u64>,
    pub block_last: Array<u32>,
    pub block_max_tf: Array<u16>,
    pub block_min_len: Array<u32>,
    /// What searches derive from the arrays above, made on first use and
    /// never saved.
    pub derived: Derived,
}

/// A BM25F index's state derived from its saved arrays, each part made the
/// first time a search needs it (so a load or reopen does not pay for it)
/// and kept: an index's arrays never change once made.
#[derive(Default)]
pub struct Derived {
    /// `lengths` in two bytes each, `u16::MAX` for a length that does not
    /// fit (read from `lengths` then): a search reads the lengths of
    /// concepts far apart, and half the bytes stay in the CPU's caches
    /// better.
    short_lengths: std::sync::OnceLock<Vec<u16>>,
    /// Every 64th token's first bytes, for [`Bm25fIndex::token_id`]
    /// (lookup.rs).
    token_heads: std::sync::OnceLock<Vec<u64>>,
}

/// Field `f`'s lengths, one per concept, of `lengths` laid out field by
/// field as [`Bm25fIndex::lengths`] is.
#[inline]
pub(super) fn field_lengths(lengths: &[u32], f: usize) -> &[u32] {
    let n = lengths.len() / 4;
    &lengths[f * n..(f + 1) * n]
}

/// Each field's total length, from `lengths` laid out field by field.
/// Integer sums: the same whatever the order (docs/spec.md §12.4).
pub(super) fn totals_of(lengths: &[u32]) -> [u64; 4] {
    std::array::from_fn(|f| {
        field_lengths(lengths, f)
            .iter()
            .map(|&l| u64::from(l))
            .sum()
    })
}

/// A token with a frequency of at least `WIDE` in some concept and field
/// keeps its frequencies in two bytes each.
pub const WIDE: u16 = 256;

/// Entries per block of a long list: small enough that a block's bounds are
/// close to its entries' scores, large enough that the blocks cost little
/// room and little time to pass over.
pub const BLOCK: usize = 128;

/// A token's blocks: the last position of each, and per block and field
/// (`4j + f`) the largest frequency and smallest length.
pub struct Blocks<'a> {
    pub last: &'a [u32],
    pub max_tf: &'a [u16],
    pub min_len: &'a [u32],
}

impl Bm25fIndex {
    /// The field lengths in two bytes each ([`Derived`]).
    pub fn short_lengths(&self) -> &[u16] {
        self.derived.short_lengths.get_or_init(|| {
            self.lengths
                .iter()
                .map(|&l| u16::try_from(l).unwrap_or(u16::MAX))
                .collect()
        })
    }

    /// How many concepts the index covers.
    pub fn len(&self) -> usize {
        self.lengths.len() / 4
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Concept `d`'s length in field `f` (`None` past the last concept).
    #[inline]
    pub fn length(&self, f: usize, d: u32) -> Option<u32> {
        self.field_lengths(f).get(d as usize).copied()
    }

    /// Every concept's length in field `f`, by position.
    pub fn field_lengths(&self, f: usize) -> &[u32] {
        field_lengths(&self.lengths, f)
    }

    pub fn token_count(&self) -> usize {
        self.token_starts.len().saturating_sub(1)
    }

    pub fn token(&self, t: u32) -> &[u8] {
        vocab_word(&self.vocab, &self.token_starts, t)
    }

    /// Token `t`'s document frequency: the concepts holding it in any field.
    pub fn df(&self, t: u32) -> u64 {
        self.starts[t as usize + 1] - self.starts[t as usize]
    }

    pub fn list(&self, t: u32) -> TokenList<'_> {
        let (a, b) = (
            self.starts[t as usize] as usize,
            self.starts[t as usize + 1] as usize,
        );
        let wide = match self.wide_tokens.binary_search(&t) {
            Ok(i) => {
                let (x, y) = (
                    self.wide_starts[i] as usize,
                    self.wide_starts[i + 1] as usize,
                );
                &self.wide_tfs[4 * x..4 * y]
            }
            Err(_) => &[],
        };
        let docs = match self.far_tokens.binary_search(&t) {
            Ok(i) => {
                let (x, y) = (self.far_starts[i] as usize, self.far_starts[i + 1] as usize);
                Docs::Far(&self.far_docs[x..y])
            }
            Err(_) => Docs::Near {
                offsets: &self.near[a..b],
                first: self.firsts[t as usize],
                block_last: self
                    .long_blocks(t)
                    .map_or(&[], |(x, y)| &self.block_last[x..y]),
            },
        };
        let heads = list::Heads {
            body: &self.body,
            dir: &self.head_dir,
        };
        TokenList::new(docs, a, heads, &self.head_words, wide)
    }

    /// Where a long token's blocks are (`None` for a shorter list).
    fn long_blocks(&self, t: u32) -> Option<(usize, usize)> {
        let i = self.long_tokens.binary_search(&t).ok()?;
        Some((
            self.block_starts[i] as usize,
            self.block_starts[i + 1] as usize,
        ))
    }

    /// Token `t`'s blocks (docs/spec.md §12.3): one per [`BLOCK`] entries of
    /// a long list, the whole list for a shorter one, none for no list.
    pub fn blocks(&self, t: u32) -> Blocks<'_> {
        let (a, b) = (
            self.starts[t as usize] as usize,
            self.starts[t as usize + 1] as usize,
        );
        if b == a {
            return Blocks {
                last: &[],
                max_tf: &[],
                min_len: &[],
            };
        }
        match self.long_blocks(t) {
            Some((x, y)) => Blocks {
                last: &self.block_last[x..y],
                max_tf: &self.block_max_tf[4 * x..4 * y],
                min_len: &self.block_min_len[4 * x..4 * y],
            },
            None => Blocks {
                last: &self.lasts[t as usize..t as usize + 1],
                max_tf: &self.max_tf[4 * t as usize..4 * t as usize + 4],
                min_len: &self.min_len[4 * t as usize..4 * t as usize + 4],
            },
        }
    }

    /// `Err` naming the first part of a saved index whose shape does not fit
    /// the rest, for `n` concepts. A cache file's index is checked before
    /// use: its CRC guards the bytes, this the shapes every lookup relies
    /// on. The concepts in the lists are not read here (that would fault in
    /// every page of the largest arrays on every reopen): a search skips an
    /// entry whose concept is out of range instead (docs/spec.md §9.3).
    pub fn check(&self, n: usize) -> Result<(), &'static str> {
        let tokens = self.token_count();
        // The tokens one after the other from the vocabulary's start
        // (docs/cache-format.md).
        let vocab_ok = self.token_starts.first() == Some(&0)
            && self.token_starts.windows(2).all(|w| w[0] < w[1])
            && self.token_starts.last().map(|&e| e as usize) == Some(self.vocab.len());
        if !vocab_ok {
            return Err("vocabulary");
        }
        let postings_ok = self.starts.len() == tokens + 1
            && self.starts.first() == Some(&0)
            && self.starts.windows(2).all(|w| w[0] <= w[1])
            && self.starts.last().map(|&e| e as usize) == Some(self.near.len())
            && self.firsts.len() == tokens
            && self.lasts.len() == tokens
            && self.body.len() == self.near.len()
            && self.head_dir.len() == self.near.len().div_ceil(list::GROUP) + 1
            && self.head_dir.first() == Some(&0)
            && self.head_dir.last().map(|&h| h as usize) == Some(self.head_words.len())
            && self.lengths.len() == 4 * n
            && self.max_tf.len() == 4 * tokens
            && self.min_len.len() == 4 * tokens
            && totals_of(&self.lengths) == self.totals;
        if !postings_ok {
            return Err("postings");
        }
        if !self.blocks_fit() {
            return Err("blocks");
        }
        if !self.side_fits(&self.wide_tokens, &self.wide_starts, self.wide_tfs.len(), 4) {
            return Err("wide frequencies");
        }
        if !self.side_fits(&self.far_tokens, &self.far_starts, self.far_docs.len(), 1) {
            return Err("far tokens");
        }
        Ok(())
    }

    /// Whether tokens kept apart (the wide ones' frequencies, the far
    /// ones' concepts: share.rs) fit the postings: `per` of `items` an entry
    /// of each one's list, one list after the other.
    fn side_fits(&self, tokens: &[u32], starts: &[u64], items: usize, per: usize) -> bool {
        starts.len() == tokens.len() + 1
            && starts.first() == Some(&0)
            && starts.last().map(|&e| per * e as usize) == Some(items)
            && tokens.windows(2).all(|w| w[0] < w[1])
            && tokens.iter().enumerate().all(|(i, &t)| {
                let Some(&end) = self.starts.get(t as usize + 1) else {
                    return false;
                };
                let (x, y) = (starts[i], starts[i + 1]);
                y >= x && end - self.starts[t as usize] == y - x
            })
    }

    /// Whether the blocks fit the postings: each long token's list cut into
    /// whole blocks of [`BLOCK`] entries, and every list longer than one
    /// block a long token's.
    fn blocks_fit(&self) -> bool {
        let blocks = self.block_last.len();
        self.block_starts.len() == self.long_tokens.len() + 1
            && self.block_starts.first() == Some(&0)
            && self.block_starts.last().map(|&e| e as usize) == Some(blocks)
            && self.block_max_tf.len() == 4 * blocks
            && self.block_min_len.len() == 4 * blocks
            && self.long_tokens.windows(2).all(|w| w[0] < w[1])
            && self.long_tokens.iter().enumerate().all(|(i, &t)| {
                let Some(&end) = self.starts.get(t as usize + 1) else {
                    return false;
                };
                let len = (end - self.starts[t as usize]) as usize;
                let (x, y) = (self.block_starts[i], self.block_starts[i + 1]);
                y >= x && len > BLOCK && (y - x) as usize == len.div_ceil(BLOCK)
            })
            // Every list longer than a block is cut (a search decodes a
            // list's concepts block by block, offsets.rs).
            && self
                .starts
                .windows(2)
                .filter(|w| (w[1] - w[0]) as usize > BLOCK)
                .count()
                == self.long_tokens.len()
    }

    /// The id of a token in the sorted vocabulary (lookup.rs).
    pub fn token_id(&self, token: &str) -> Option<u32> {
        let heads = self.derived.token_heads.get_or_init(|| lookup::heads(self));
        lookup::find(self, heads, token.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::concept::read_concept;
    use crate::index::Index;
    use crate::text::analyze::Analyzer;

    /// `n` concepts, every one holding "common", every third "third" (tokens
    /// are folded, docs/spec.md §3).
    fn index(n: usize) -> Index {
        let concepts: Vec<_> = (0..n)
            .map(|i| {
                let body = if i % 3 == 0 { "common third" } else { "common" };
                let src = format!("---\ntitle: c{i}\n---\n{body}\n");
                read_concept(&format!("c{i:05}"), "c.md", src.as_bytes())
                    .concept
                    .unwrap()
            })
            .collect();
        Index::build(&concepts, &Analyzer::new(None))
    }

    #[test]
    fn long_lists_are_cut_into_blocks_that_bound_their_entries() {
        let n = 3 * BLOCK + 7;
        let ix = index(n);
        let b = &ix.bm25f;
        assert_eq!(b.check(n), Ok(()));
        let common = b.token_id("COMMON").unwrap();
        let blocks = b.blocks(common);
        assert_eq!(blocks.last.len(), n.div_ceil(BLOCK));
        let list = b.list(common);
        for (j, &last) in blocks.last.iter().enumerate() {
            let entries = j * BLOCK..((j + 1) * BLOCK).min(list.len());
            assert_eq!(last, list.docs.get(entries.end - 1));
            for f in 0..4 {
                let tfs = entries.clone().map(|e| list.tfs(e)[f]);
                assert_eq!(blocks.max_tf[4 * j + f], tfs.max().unwrap());
            }
        }
        // A short list is one block: the token's own bounds.
        let short = b.token_id("C7").unwrap();
        assert_eq!(b.blocks(short).last, &[7]);
        assert_eq!(b.blocks(short).max_tf, &b.max_tf[4 * short as usize..][..4]);
    }

    #[test]
    fn frequencies_of_256_and_more_are_kept_in_two_bytes() {
        let bodies = ["many ".repeat(300), "many few ".repeat(255), "few".into()];
        let concepts = crate::testing::concepts_of(
            bodies
                .iter()
                .enumerate()
                .map(|(i, body)| format!("---\ntitle: c{i}\n---\n{body}\n")),
        );
        let mut b = Index::build(&concepts, &Analyzer::new(None)).bm25f;
        assert_eq!(b.check(3), Ok(()));
        let (many, few) = (b.token_id("MANY").unwrap(), b.token_id("FEW").unwrap());
        assert_eq!(*b.wide_tokens, [many]);
        let tfs = |b: &Bm25fIndex, t: u32| -> Vec<[u16; 4]> {
            let list = b.list(t);
            (0..list.len()).map(|i| list.tfs(i)).collect()
        };
        assert_eq!(tfs(&b, many), [[0, 0, 0, 300], [0, 0, 0, 255]]);
        assert_eq!(tfs(&b, few), [[0, 0, 0, 255], [0, 0, 0, 1]]);
        assert_eq!(b.max_tf[4 * many as usize + 3], 300);
        // The wide frequencies must cover the wide token's list exactly.
        let mut starts = b.wide_starts.to_vec();
        starts[1] -= 1;
        b.wide_starts = starts.into();
        assert_eq!(b.check(3), Err("wide frequencies"));
    }

    #[test]
    fn tokens_whose_concepts_lie_far_apart_keep_them_whole() {
        // RARE spans 69,999 concepts in one block, SPARSE 66,040 in its
        // first of two: both far (list.rs); COMMON is near.
        let n = 70_000;
        let concepts: Vec<_> = (0..n)
            .map(|i| {
                let mut body = String::from("common");
                if [0, 5, n - 1].contains(&i) {
                    body += " rare";
                }
                if i % 520 == 0 {
                    body += " sparse";
                }
                let src = format!("---\ntitle: c\n---\n{body}\n");
                read_concept(&format!("c{i:05}"), "c.md", src.as_bytes())
                    .concept
                    .unwrap()
            })
            .collect();
        let b = Index::build(&concepts, &Analyzer::new(None)).bm25f;
        assert_eq!(b.check(n), Ok(()));
        let id = |t: &str| b.token_id(t).unwrap();
        let (rare, sparse, common) = (id("RARE"), id("SPARSE"), id("COMMON"));
        assert_eq!(*b.far_tokens, [rare, sparse]);
        assert_eq!(b.list(rare).docs.to_vec(), [0, 5, n as u32 - 1]);
        let every: Vec<u32> = (0..n as u32).step_by(520).collect();
        assert_eq!(b.list(sparse).docs.to_vec(), every);
        assert_eq!(b.blocks(sparse).last.len(), 2);
        assert_eq!(
            b.list(common).docs.to_vec(),
            (0..n as u32).collect::<Vec<_>>()
        );
        assert_eq!(b.blocks(rare).last, [n as u32 - 1]);
        // A far token's concepts must cover its list exactly.
        let mut far = b;
        let mut starts = far.far_starts.to_vec();
        starts[1] -= 1;
        far.far_starts = starts.into();
        assert_eq!(far.check(n), Err("far tokens"));
    }

    #[test]
    fn a_check_finds_blocks_that_do_not_fit() {
        let n = 2 * BLOCK + 1;
        let mut b = index(n).bm25f;
        let mut last = b.block_last.to_vec();
        last[0] += 1;
        b.block_last = last.into();
        assert_eq!(b.check(n), Ok(()), "block ends are not read");
        let mut starts = b.block_starts.to_vec();
        starts[1] -= 1;
        b.block_starts = starts.into();
        assert_eq!(b.check(n), Err("blocks"));
        assert_eq!(index(n).bm25f.check(n + 1), Err("postings"));
        // A long list left uncut.
        let mut b = index(n).bm25f;
        b.long_tokens = b.long_tokens[1..].to_vec().into();
        let mut starts = b.block_starts.to_vec();
        let first = starts[1];
        starts = starts[1..].iter().map(|&s| s - first).collect();
        b.block_starts = starts.into();
        let keep = b.block_last.len() - first as usize;
        b.block_last = b.block_last[first as usize..].to_vec().into();
        b.block_max_tf = b.block_max_tf[4 * first as usize..].to_vec().into();
        b.block_min_len = b.block_min_len[4 * first as usize..].to_vec().into();
        assert_eq!(b.block_last.len(), keep);
        assert_eq!(b.check(n), Err("blocks"));
    }
}
