//! A cursor over one query token's list, and the bounds of the token's
//! score in one entry from its frequencies alone (docs/spec.md §12.3).

use super::{saturate, weighted_tf, Norms, Params, Term};
use crate::index::bm25f::Bm25fIndex;

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

    /// Moves past the entries up to position `to` whose weighted frequency,
    /// bounded with `per_tf` (each field's part for a frequency of 1 at the
    /// block's shortest length), is below `x_need`.
    pub(super) fn skip_below(&mut self, t: &Term<'_>, to: u32, per_tf: &[f64; 4], x_need: f64) {
        let docs = t.list.docs;
        let mut i = self.at;
        while i < docs.len() && docs[i] <= to {
            if bound_x(t.list.tfs(i), per_tf) >= x_need {
                break;
            }
            i += 1;
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

/// A bound of token `t`'s score in the concept of its `i`-th entry from
/// its frequencies alone, with `per_tf` as in [`Cursor::skip_below`]: no
/// field length is read.
pub(super) fn entry_bound(
    t: &Term<'_>,
    i: usize,
    params: &Params,
    per_tf: &[f64; 4],
    memo: &mut Memo,
) -> f64 {
    let tfs = t.list.tfs(i);
    // Most entries are a few occurrences in the body alone: their bounds
    // in this block are remembered, one division each.
    if tfs[0] == 0 && tfs[1] == 0 && tfs[2] == 0 && (tfs[3] as usize) < MEMO {
        let k = tfs[3] as usize;
        if memo.known & (1 << k) == 0 {
            memo.known |= 1 << k;
            memo.bound[k] = saturate(params, t.idf, f64::from(tfs[3]) * per_tf[3]);
        }
        return memo.bound[k];
    }
    saturate(params, t.idf, bound_x(tfs, per_tf))
}

/// A bound of a weighted frequency from the token's four frequencies, with
/// `per_tf` each field's part for a frequency of 1 at the block's shortest
/// length (a part grows with the frequency and falls with the length).
pub(super) fn bound_x(tfs: [u16; 4], per_tf: &[f64; 4]) -> f64 {
    let mut x = 0.0;
    for f in 0..4 {
        x += f64::from(tfs[f]) * per_tf[f];
    }
    x
}

/// Body frequencies whose bound a block remembers.
pub(super) const MEMO: usize = 16;

/// A token's bounds in its current block for a body frequency below
/// [`MEMO`] alone, as computed; `known` has a bit per one computed.
#[derive(Clone, Copy, Default)]
pub(super) struct Memo {
    pub(super) known: u32,
    bound: [f64; MEMO],
}
