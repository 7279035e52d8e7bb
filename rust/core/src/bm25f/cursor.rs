//! A cursor over one query token's list, and the bounds of the token's
//! score in one entry from its frequencies alone (docs/spec.md §12.3).

use super::{part, saturate, weighted_tf, Lengths, Norms, Params, Term};
use crate::index::bm25f::{tfs_of, BLOCK};

/// A cursor over one token's list, with the concept at it: a list keeps
/// its concepts as offsets (index/bm25f/offsets.rs), and a cursor is asked for
/// its concept more often than it moves.
pub(super) struct Cursor {
    pub(super) at: usize,
    doc: u32,
}

impl Cursor {
    /// A cursor at entry `at` of `t`'s list.
    pub(super) fn new(t: &Term<'_>, at: usize) -> Cursor {
        Cursor {
            at,
            doc: t.list.docs.get(at),
        }
    }

    /// The position at the cursor (`u32::MAX` past the end).
    #[inline]
    pub(super) fn doc(&self) -> u32 {
        self.doc
    }

    /// Move to the first position `>= d`.
    #[inline]
    pub(super) fn seek(&mut self, t: &Term<'_>, d: u32) {
        if self.doc < d {
            self.at = t.list.docs.seek(self.at, d);
            self.doc = t.list.docs.get(self.at);
        }
    }

    /// The token's weighted frequency in the concept at `d`, 0 when the
    /// cursor is not on it (the cursor is at or before it, and moves past).
    pub(super) fn weighted_tf(
        &mut self,
        t: &Term<'_>,
        d: u32,
        lengths: &Lengths<'_>,
        params: &Params,
        norms: &Norms,
    ) -> f64 {
        if self.doc != d {
            return 0.0;
        }
        let tfs = t.list.tfs(self.at);
        self.at += 1;
        self.doc = t.list.docs.get(self.at);
        // A saved list naming a concept out of range (a tampered cache file:
        // its lists are not read at open, docs/spec.md §9.3) scores nothing.
        weighted_tf(params, norms, tfs, lengths, d).unwrap_or(0.0)
    }
}

/// Bounds of each query token's score in one entry of its list from the
/// entry's frequencies alone, no field length read: each field's part for a
/// frequency of 1 at the shortest length in the entry's block, times the
/// frequency (a part grows with the frequency and falls with the length).
/// Per token, the parts of the block last asked about are kept, and the
/// bounds of a few occurrences in the body alone, which most entries are.
pub(super) struct EntryBounds {
    block: Vec<usize>,
    per_tf: Vec<[f64; 4]>,
    memo: Vec<Memo>,
}

impl EntryBounds {
    pub(super) fn new(m: usize) -> EntryBounds {
        EntryBounds {
            block: vec![usize::MAX; m],
            per_tf: vec![[0.0; 4]; m],
            memo: vec![Memo::default(); m],
        }
    }

    /// The bound of entry `i` of `term`, the `t`-th query token.
    #[inline]
    pub(super) fn of(
        &mut self,
        term: &Term<'_>,
        t: usize,
        i: usize,
        params: &Params,
        norms: &Norms,
    ) -> f64 {
        self.enter(term, t, block_of(term, i), params, norms);
        self.in_block(term, t, term.list.tfs(i), params)
    }

    /// Makes block `j` of `term` (the `t`-th query token) the one whose
    /// parts are kept; its parts for a frequency of 1.
    #[inline]
    pub(super) fn enter(
        &mut self,
        term: &Term<'_>,
        t: usize,
        j: usize,
        params: &Params,
        norms: &Norms,
    ) -> &[f64; 4] {
        if self.block[t] != j {
            self.block[t] = j;
            self.memo[t].known = 0;
            let b = &term.blocks;
            self.per_tf[t] = std::array::from_fn(|f| match b.max_tf[4 * j + f] {
                0 => 0.0,
                _ => part(params, norms, f, 1, b.min_len[4 * j + f]),
            });
        }
        &self.per_tf[t]
    }

    /// [`EntryBounds::in_block`] of an entry whose frequencies are one
    /// byte each, as one little-endian word (title in the low byte).
    #[inline]
    pub(super) fn of_word(&mut self, term: &Term<'_>, t: usize, word: u32, params: &Params) -> f64 {
        // In the body alone, fewer than MEMO times: one test.
        if word & !(((MEMO as u32) - 1) << 24) == 0 {
            return self.remembered(term, t, (word >> 24) as usize, params);
        }
        saturate(params, term.idf, bound_x(tfs_of(word), &self.per_tf[t]))
    }

    /// The bound of an entry with frequencies `tfs` in the block entered
    /// last for token `t`.
    #[inline]
    pub(super) fn in_block(
        &mut self,
        term: &Term<'_>,
        t: usize,
        tfs: [u16; 4],
        params: &Params,
    ) -> f64 {
        if tfs[0] == 0 && tfs[1] == 0 && tfs[2] == 0 && (tfs[3] as usize) < MEMO {
            return self.remembered(term, t, tfs[3] as usize, params);
        }
        saturate(params, term.idf, bound_x(tfs, &self.per_tf[t]))
    }

    /// The bound of `k` occurrences in the body alone (`k < MEMO`), computed
    /// once per block.
    #[inline]
    fn remembered(&mut self, term: &Term<'_>, t: usize, k: usize, params: &Params) -> f64 {
        let memo = &mut self.memo[t];
        if memo.known & (1 << k) == 0 {
            memo.known |= 1 << k;
            memo.bound[k] = saturate(params, term.idf, k as f64 * self.per_tf[t][3]);
        }
        memo.bound[k]
    }
}

/// The block of entry `i` of `term`'s list. Blocks are BLOCK entries each
/// from the list's start (a list that is not cut is one block;
/// index/bm25f/mod.rs checks a saved index's long lists, and a longer list
/// saved as one block is taken as one).
#[inline]
pub(super) fn block_of(term: &Term<'_>, i: usize) -> usize {
    (i / BLOCK).min(term.blocks.last.len().saturating_sub(1))
}

/// The end of block `j` of `term`'s list, or `to` if that is sooner.
#[inline]
pub(super) fn block_end(term: &Term<'_>, j: usize, to: usize) -> usize {
    if j + 1 >= term.blocks.last.len() {
        to
    } else {
        ((j + 1) * BLOCK).min(to)
    }
}

/// A bound of a weighted frequency from the token's four frequencies, with
/// `per_tf` each field's part for a frequency of 1 at the block's shortest
/// length.
#[inline]
pub(super) fn bound_x(tfs: [u16; 4], per_tf: &[f64; 4]) -> f64 {
    let mut x = 0.0;
    for (f, &tf) in tfs.iter().enumerate() {
        x += f64::from(tf) * per_tf[f];
    }
    x
}

/// Body frequencies whose bound a block remembers.
const MEMO: usize = 16;
// `of_word` tests a body frequency below MEMO with a mask.
const _: () = assert!(MEMO.is_power_of_two() && MEMO <= 32);

/// A token's bounds in its current block for a body frequency below
/// [`MEMO`] alone, as computed; `known` has a bit per one computed.
#[derive(Clone, Copy, Default)]
struct Memo {
    known: u32,
    bound: [f64; MEMO],
}
