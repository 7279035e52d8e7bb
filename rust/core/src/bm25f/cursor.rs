//! A cursor over one query token's list, and the bounds of the token's
//! score in one entry from its frequencies alone (docs/spec.md §12.3).

use super::{part, saturate, weighted_tf, Norms, Params, Term};
use crate::index::bm25f::{Bm25fIndex, BLOCK};

/// A cursor over one token's list.
pub(super) struct Cursor {
    pub(super) at: usize,
}

impl Cursor {
    /// The position at the cursor (`u32::MAX` past the end).
    pub(super) fn doc(&self, t: &Term<'_>) -> u32 {
        t.list.docs.get(self.at).copied().unwrap_or(u32::MAX)
    }

    /// Move to the first position `>= d` (galloping).
    pub(super) fn seek(&mut self, t: &Term<'_>, d: u32) {
        let docs = t.list.docs;
        let mut i = self.at;
        if docs.get(i).is_some_and(|&x| x < d) {
            let mut step = 1;
            while i + step < docs.len() && docs[i + step] < d {
                i += step;
                step *= 2;
            }
            let end = (i + step + 1).min(docs.len());
            i += docs[i..end].partition_point(|&x| x < d);
        }
        self.at = i;
    }

    /// The token's weighted frequency in the concept at `d`, 0 when the
    /// cursor is not on it (the cursor is at or before it, and moves past).
    pub(super) fn weighted_tf(
        &mut self,
        t: &Term<'_>,
        d: u32,
        index: &Bm25fIndex,
        params: &Params,
        norms: &Norms,
    ) -> f64 {
        if t.list.docs.get(self.at) != Some(&d) {
            return 0.0;
        }
        let tfs = t.list.tfs(self.at);
        self.at += 1;
        // A saved list naming a concept out of range (a tampered cache file:
        // its lists are not read at open, docs/spec.md §9.3) scores nothing.
        weighted_tf(params, norms, tfs, index, d).unwrap_or(0.0)
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
        // Blocks are BLOCK entries each from the list's start (a list that
        // is not cut is one block; index/bm25f/mod.rs checks a saved index's
        // long lists, and a longer list saved as one block is taken as one).
        let j = (i / BLOCK).min(term.blocks.last.len().saturating_sub(1));
        if self.block[t] != j {
            self.block[t] = j;
            self.memo[t].known = 0;
            let b = &term.blocks;
            self.per_tf[t] = std::array::from_fn(|f| match b.max_tf[4 * j + f] {
                0 => 0.0,
                _ => part(params, norms, f, 1, b.min_len[4 * j + f]),
            });
        }
        let per_tf = &self.per_tf[t];
        let memo = &mut self.memo[t];
        let tfs = term.list.tfs(i);
        if tfs[0] == 0 && tfs[1] == 0 && tfs[2] == 0 && (tfs[3] as usize) < MEMO {
            let k = tfs[3] as usize;
            if memo.known & (1 << k) == 0 {
                memo.known |= 1 << k;
                memo.bound[k] = saturate(params, term.idf, f64::from(tfs[3]) * per_tf[3]);
            }
            return memo.bound[k];
        }
        let mut x = 0.0;
        for f in 0..4 {
            x += f64::from(tfs[f]) * per_tf[f];
        }
        saturate(params, term.idf, x)
    }
}

/// Body frequencies whose bound a block remembers.
const MEMO: usize = 16;

/// A token's bounds in its current block for a body frequency below
/// [`MEMO`] alone, as computed; `known` has a bit per one computed.
#[derive(Clone, Copy, Default)]
struct Memo {
    known: u32,
    bound: [f64; MEMO],
}
