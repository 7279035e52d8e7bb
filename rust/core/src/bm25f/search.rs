//! The top-k by BM25F score with dynamic pruning (block-max MaxScore),
//! exactly the first k of the full ranking (docs/spec.md §12.3).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use rayon::prelude::*;

use super::{allows, part, saturate, terms, weighted_tf, Norms, Params, QueryTokens, Stats, Term};
use crate::bundle::Bundle;
use crate::index::bm25f::{Blocks, Bm25fIndex};
use crate::score::tagged;

/// The positions of a search in order, with their scores.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ranked {
    pub positions: Vec<u32>,
    pub scores: Vec<f64>,
}

/// One scored concept; the greatest is the best (score, then the smaller
/// position).
#[derive(Debug, Clone, Copy)]
pub(super) struct Hit {
    pub(super) score: f64,
    pub(super) position: u32,
}

impl PartialEq for Hit {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Hit {}
impl PartialOrd for Hit {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Hit {
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .total_cmp(&other.score)
            .then_with(|| other.position.cmp(&self.position))
    }
}

/// A cursor over one token's list.
struct Cursor {
    at: usize,
}

impl Cursor {
    /// The position at the cursor (`u32::MAX` past the end).
    fn doc(&self, t: &Term<'_>) -> u32 {
        t.list.docs.get(self.at).copied().unwrap_or(u32::MAX)
    }

    /// Move to the first position `>= d` (galloping).
    fn seek(&mut self, t: &Term<'_>, d: u32) {
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
    fn skip_below(&mut self, t: &Term<'_>, to: u32, per_tf: &[f64; 4], x_need: f64) {
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

    /// A bound of the token's score in the concept at `d` (0 when the
    /// cursor is not on it) from its frequencies alone, with `per_tf` as in
    /// [`Cursor::skip_below`]: no field length is read.
    fn bound_at(
        &self,
        t: &Term<'_>,
        d: u32,
        params: &Params,
        per_tf: &[f64; 4],
        memo: &mut Memo,
    ) -> f64 {
        if t.list.docs.get(self.at) != Some(&d) {
            return 0.0;
        }
        let tfs = t.list.tfs(self.at);
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

    /// The token's weighted frequency in the concept at `d`, 0 when the
    /// cursor is not on it (the cursor is at or before it, and moves past).
    fn weighted_tf(
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

/// A bound of a weighted frequency from the token's four frequencies, with
/// `per_tf` each field's part for a frequency of 1 at the block's shortest
/// length (a part grows with the frequency and falls with the length).
fn bound_x(tfs: [u16; 4], per_tf: &[f64; 4]) -> f64 {
    let mut x = 0.0;
    for f in 0..4 {
        x += f64::from(tfs[f]) * per_tf[f];
    }
    x
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

/// Relative slack of the pruning test: a concept is skipped only when its
/// bound is below the threshold by more than the rounding of sums taken in
/// another order could account for.
const SLACK: f64 = 1e-9;

/// The first `limit` concepts (all with `None`) by BM25F score (docs/spec.md
/// §12.3), with `stats` (the bundle's own or a catalog's) and `params`;
/// `tag` keeps concepts carrying that tag. Scores of zero are left out.
pub fn search(
    b: &Bundle,
    tokens: &QueryTokens,
    stats: &Stats,
    params: &Params,
    tag: Option<&str>,
    limit: Option<usize>,
) -> Ranked {
    match tagged(b, tag) {
        Some(allowed) => search_index(
            &b.index.bm25f,
            tokens,
            stats,
            params,
            allowed.as_deref(),
            limit,
        ),
        None => Ranked::default(),
    }
}

/// [`search`] of each of `queries` (its tokens and the statistics it is
/// scored with), in parallel (docs/spec.md §3.7, §12.3): the same results, in
/// the same order as `queries`, as one call per query. The tag filter is
/// looked up once for all of them.
pub fn search_many(
    b: &Bundle,
    queries: &[(&QueryTokens, &Stats)],
    params: &Params,
    tag: Option<&str>,
    limit: Option<usize>,
) -> Vec<Ranked> {
    let Some(allowed) = tagged(b, tag) else {
        return vec![Ranked::default(); queries.len()];
    };
    queries
        .par_iter()
        .map(|(tokens, stats)| {
            search_index(
                &b.index.bm25f,
                tokens,
                stats,
                params,
                allowed.as_deref(),
                limit,
            )
        })
        .collect()
}

/// The best `k` hits seen so far (every hit with no `k`).
pub(super) struct TopK {
    k: Option<usize>,
    heap: BinaryHeap<std::cmp::Reverse<Hit>>,
    all: Vec<Hit>,
}

impl TopK {
    pub(super) fn new(k: Option<usize>) -> TopK {
        TopK {
            k,
            heap: BinaryHeap::new(),
            all: Vec::new(),
        }
    }

    /// The score a concept must reach to enter (ties by position decide).
    fn threshold(&self) -> f64 {
        match self.k {
            Some(k) if self.heap.len() == k => {
                self.heap.peek().map_or(f64::NEG_INFINITY, |h| h.0.score)
            }
            _ => f64::NEG_INFINITY,
        }
    }

    pub(super) fn offer(&mut self, hit: Hit) {
        match self.k {
            None => self.all.push(hit),
            Some(k) if self.heap.len() < k => self.heap.push(std::cmp::Reverse(hit)),
            Some(_) => {
                if self.heap.peek().is_some_and(|min| hit > min.0) {
                    self.heap.pop();
                    self.heap.push(std::cmp::Reverse(hit));
                }
            }
        }
    }

    pub(super) fn ranked(self) -> Ranked {
        let mut hits: Vec<Hit> = match self.k {
            None => self.all,
            Some(_) => self.heap.into_iter().map(|h| h.0).collect(),
        };
        hits.sort_unstable_by(|a, b| b.cmp(a));
        Ranked {
            positions: hits.iter().map(|h| h.position).collect(),
            scores: hits.iter().map(|h| h.score).collect(),
        }
    }
}

/// [`search`] over an index, among the positions set in `allowed` (all
/// without it).
///
/// Block-max MaxScore, document at a time: the positions are walked in
/// windows, each window inside one block of every token's list, so each
/// token's block bound caps its score there. Per window, the tokens sorted
/// by that bound; those whose bounds together cannot reach the current k-th
/// score are non-essential, only looked at for concepts the others find; a
/// window where no token is essential is skipped whole. Before a concept
/// found by the essential tokens is scored, its bound from their frequencies
/// at the block's shortest lengths is tested (no field length read, no
/// division when one token is essential: a frequency below what the
/// threshold needs is passed over in a tight scan). Every concept kept is
/// scored with all its tokens in query order, so scores do not depend on
/// pruning. The whole ranking (no `limit`) is taken term at a time instead
/// (`taat.rs`), which nothing can prune.
pub fn search_index(
    index: &Bm25fIndex,
    tokens: &QueryTokens,
    stats: &Stats,
    params: &Params,
    allowed: Option<&[u64]>,
    limit: Option<usize>,
) -> Ranked {
    if tokens.is_empty() || index.is_empty() || limit == Some(0) {
        return Ranked::default();
    }
    let norms = Norms::new(params, stats);
    let terms = terms(index, tokens, stats);
    if limit.is_none() {
        return super::taat::rank(index, &terms, params, &norms, allowed);
    }
    let bounds: Vec<Vec<f64>> = terms
        .iter()
        .map(|t| block_bounds(params, &norms, t.idf, &t.blocks))
        .collect();
    let m = terms.len();
    let mut top = TopK::new(limit);
    let mut cursors: Vec<Cursor> = terms.iter().map(|_| Cursor { at: 0 }).collect();
    let mut block = vec![0usize; m];
    let mut bound = vec![0.0f64; m];
    let mut by_bound: Vec<usize> = (0..m).collect();
    let mut rest = vec![0.0f64; m + 1];
    let mut parts = vec![0.0f64; m];
    let mut per_tf = vec![[0.0f64; 4]; m];
    let mut per_tf_block = vec![usize::MAX; m];
    let mut memo = vec![Memo::default(); m];
    let mut from = 0u32;
    loop {
        // The window: from `from` to the first block end among the tokens.
        let mut to = u32::MAX;
        let mut live = false;
        for t in 0..m {
            let last = terms[t].blocks.last;
            while block[t] < last.len() && last[block[t]] < from {
                block[t] += 1;
            }
            bound[t] = match last.get(block[t]) {
                Some(&end) => {
                    live = true;
                    to = to.min(end);
                    let j = block[t];
                    if per_tf_block[t] != j {
                        per_tf_block[t] = j;
                        memo[t].known = 0;
                        let b = &terms[t].blocks;
                        per_tf[t] = std::array::from_fn(|f| match b.max_tf[4 * j + f] {
                            0 => 0.0,
                            _ => part(params, &norms, f, 1, b.min_len[4 * j + f]),
                        });
                    }
                    bounds[t][j]
                }
                None => 0.0,
            };
        }
        if !live {
            break;
        }
        by_bound.sort_by(|&a, &b| bound[b].total_cmp(&bound[a]).then(a.cmp(&b)));
        for i in (0..m).rev() {
            rest[i] = rest[i + 1] + bound[by_bound[i]];
        }
        let mut essential = m;
        let mut started = false;
        let mut need_for = f64::NAN;
        let mut x_need = 0.0;
        loop {
            let threshold = top.threshold();
            while essential > 0 && rest[essential - 1] * (1.0 + SLACK) < threshold {
                essential -= 1;
            }
            if essential == 0 {
                break;
            }
            if !started {
                for &t in &by_bound[..essential] {
                    cursors[t].seek(&terms[t], from);
                }
                started = true;
            }
            if essential == 1 {
                // The weighted frequency `x` the one essential token needs for
                // `idf · x / (k1 + x)` to reach the threshold with the other
                // tokens' bounds, lowered by the slack for rounding.
                let t = by_bound[0];
                if need_for != threshold {
                    need_for = threshold;
                    let need = threshold / (1.0 + 2.0 * SLACK) - rest[1];
                    let idf = terms[t].idf;
                    x_need = if need > 0.0 && need < idf {
                        need * params.k1 / (idf - need) * (1.0 - SLACK)
                    } else {
                        0.0
                    };
                }
                if x_need > 0.0 {
                    cursors[t].skip_below(&terms[t], to, &per_tf[t], x_need);
                }
            }
            let d = by_bound[..essential]
                .iter()
                .map(|&t| cursors[t].doc(&terms[t]))
                .min()
                .unwrap_or(u32::MAX);
            if d > to {
                break;
            }
            if !allows(allowed, d) {
                for &t in &by_bound[..essential] {
                    cursors[t].seek(&terms[t], d + 1);
                }
                continue;
            }
            if threshold > f64::NEG_INFINITY && essential > 1 {
                let mut ub = 0.0;
                for &t in &by_bound[..essential] {
                    ub += cursors[t].bound_at(&terms[t], d, params, &per_tf[t], &mut memo[t]);
                }
                if (ub + rest[essential]) * (1.0 + SLACK) < threshold {
                    for &t in &by_bound[..essential] {
                        if cursors[t].doc(&terms[t]) == d {
                            cursors[t].at += 1;
                        }
                    }
                    continue;
                }
            }
            parts.fill(0.0);
            let mut partial = 0.0;
            for &t in &by_bound[..essential] {
                let x = cursors[t].weighted_tf(&terms[t], d, index, params, &norms);
                parts[t] = saturate(params, terms[t].idf, x);
                partial += parts[t];
            }
            let mut skipped = false;
            for i in essential..m {
                if (partial + rest[i]) * (1.0 + SLACK) < threshold {
                    skipped = true;
                    break;
                }
                let t = by_bound[i];
                cursors[t].seek(&terms[t], d);
                let x = cursors[t].weighted_tf(&terms[t], d, index, params, &norms);
                parts[t] = saturate(params, terms[t].idf, x);
                partial += parts[t];
            }
            if skipped {
                continue;
            }
            // The score in query order, whatever order the tokens were read in.
            let score = parts.iter().fold(0.0, |a, &p| a + p);
            if score > 0.0 {
                top.offer(Hit { score, position: d });
            }
        }
        if to == u32::MAX {
            break;
        }
        from = to + 1;
    }
    top.ranked()
}

/// An upper bound of a token's score in each of its blocks: its part from
/// each field's largest frequency and shortest length in the block (a part
/// grows with the frequency and falls with the length, and rounding keeps
/// that order), saturated.
fn block_bounds(params: &Params, norms: &Norms, idf: f64, b: &Blocks<'_>) -> Vec<f64> {
    (0..b.last.len())
        .map(|j| {
            let x = (0..4)
                .map(|f| match b.max_tf[4 * j + f] {
                    0 => 0.0,
                    tf => part(params, norms, f, tf, b.min_len[4 * j + f]),
                })
                .fold(0.0, |a, p| a + p);
            saturate(params, idf, x)
        })
        .collect()
}
