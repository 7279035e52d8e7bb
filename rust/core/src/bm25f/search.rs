//! The top-k by BM25F score with dynamic pruning (block-max MaxScore),
//! exactly the first k of the full ranking (docs/spec.md §12.3).

use rayon::prelude::*;

use super::cursor::{Cursor, EntryBounds};
use super::stretch::{Stretch, GATHER, STRETCH};
use super::topk::{Hit, TopK};
use super::{allows, part, saturate, terms, Lengths, Norms, Params, QueryTokens, Stats, Term};
use crate::bundle::Bundle;
use crate::index::bm25f::{Blocks, Bm25fIndex};
use crate::score::tagged;

/// The positions of a search in order, with their scores.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ranked {
    pub positions: Vec<u32>,
    pub scores: Vec<f64>,
}

/// The score of concept `d`, its `essential` first tokens of `by_bound`
/// having their cursors at or before it: `None` when it is 0 or when, with
/// the tokens read so far, the others' bounds (`rest`) cannot lift it to
/// `threshold`. Every token is read in `by_bound` order; the score is
/// summed in query order, whatever order they were read in, so it does
/// not depend on pruning.
#[allow(clippy::too_many_arguments)]
fn score_rest(
    d: u32,
    essential: usize,
    threshold: f64,
    by_bound: &[usize],
    rest: &[f64],
    terms: &[Term<'_>],
    cursors: &mut [Cursor],
    parts: &mut [f64],
    lengths: &Lengths<'_>,
    params: &Params,
    norms: &Norms,
) -> Option<f64> {
    parts.fill(0.0);
    let mut partial = 0.0;
    for (i, &t) in by_bound.iter().enumerate() {
        if i >= essential {
            if (partial + rest[i]) * (1.0 + SLACK) < threshold {
                return None;
            }
            cursors[t].seek(&terms[t], d);
        }
        let x = cursors[t].weighted_tf(&terms[t], d, lengths, params, norms);
        parts[t] = saturate(params, terms[t].idf, x);
        partial += parts[t];
    }
    let score = parts.iter().fold(0.0, |a, &p| a + p);
    (score > 0.0).then_some(score)
}

/// A sum of bounds below which a concept fails the pruning test
/// `(sum + rest) · (1 + SLACK) < threshold` whatever the rounding: the
/// drain's cheap first test, the exact one after it (−∞ while the top-k is
/// not full, so every concept is kept).
fn drain_cut(threshold: f64, rest: f64) -> f64 {
    let cut = threshold / (1.0 + 2.0 * SLACK) - rest;
    cut - cut.abs() * SLACK
}

/// Relative slack of the pruning test: a concept is skipped only when its
/// bound is below the threshold by more than the rounding of sums taken in
/// another order could account for.
pub(super) const SLACK: f64 = 1e-9;

/// The least positive `k1` or field weight the pruned top-k takes: below
/// it a bound's factors (a weight over a length norm, `k1` times a need)
/// can be subnormal, whose rounding [`SLACK`] does not cover (a body weight
/// of 5e-324 left the best concept unread). Such parameters rank every
/// concept and keep the first `k`, exact by construction (docs/spec.md
/// §12.4). A norm is below 2^64 (lengths fit 32 bits), so `w / norm` stays
/// normal above this.
const PRUNE_MIN: f64 = 1e-250;

/// The most tokens found in the index that the pruned top-k takes: each of
/// its windows sorts the tokens and each concept it scores walks them, so
/// its cost grows with tokens × concepts, quadratic on a long query whose
/// every word matches (10,000 such tokens took 0.47 s for a top 10 against
/// 6 ms for the whole ranking). Past it the query is ranked term at a time,
/// linear in the entries read, and the first `k` kept (docs/spec.md §12.4):
/// agents' questions have a few dozen tokens at most.
const PRUNE_MAX_TOKENS: usize = 64;

/// Whether the pruned top-k's bounds hold for `params` ([`PRUNE_MIN`]).
fn prunable(params: &Params) -> bool {
    let fine = |x: f64| x == 0.0 || x >= PRUNE_MIN;
    fine(params.k1) && params.weights.iter().all(|&w| fine(w))
}

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

/// [`search`] over an index, among the positions set in `allowed` (all
/// without it).
///
/// Block-max MaxScore over windows of [`STRETCH`] positions, each from the
/// first position any token holds past the last: each token's bound in a
/// window is the largest of its blocks' there; the tokens sorted by it;
/// those whose bounds together cannot reach the current k-th score are
/// non-essential, only looked at for concepts the others hold, and a window
/// where no token is essential is passed over whole. The essential tokens'
/// lists, and the others' not much longer, are read in one pass each
/// (`stretch.rs`), their entries' bounds from frequencies at the block's
/// shortest lengths summed per concept, and only concepts whose sum can
/// reach the threshold are scored (one essential token alone: an entry
/// short of what the threshold needs is passed over as it is read). Every
/// concept kept is scored with all its tokens in query order, so scores do
/// not depend on pruning. The whole ranking (no `limit`) is taken term at a
/// time instead (`taat.rs`), which nothing can prune.
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
    let lengths = Lengths::of(index);
    let terms = terms(index, tokens, stats);
    if limit.is_none() || !prunable(params) || terms.len() > PRUNE_MAX_TOKENS {
        return super::taat::rank(index, &terms, params, &norms, allowed, limit);
    }
    let bounds: Vec<Vec<f64>> = terms
        .iter()
        .map(|t| block_bounds(params, &norms, t.idf, &t.blocks))
        .collect();
    let m = terms.len();
    let mut top = TopK::new(limit);
    let mut cursors: Vec<Cursor> = terms.iter().map(|t| Cursor::new(t, 0)).collect();
    let mut block = vec![0usize; m];
    let mut bound = vec![0.0f64; m];
    let mut by_bound: Vec<usize> = (0..m).collect();
    let mut rest = vec![0.0f64; m + 1];
    let mut parts = vec![0.0f64; m];
    let mut entry_bounds = EntryBounds::new(m);
    let mut stretch = Stretch::new();
    let mut from = 0u32;
    loop {
        // The window: `STRETCH` concepts from the first any token holds
        // (every cursor is left at its first entry at or after it).
        let mut lo = u32::MAX;
        for (c, t) in cursors.iter_mut().zip(&terms) {
            c.seek(t, from);
            lo = lo.min(c.doc());
        }
        if lo == u32::MAX {
            break;
        }
        let hi = lo.saturating_add(STRETCH as u32 - 1);
        // Each token's bound there: the largest of its blocks' there.
        for t in 0..m {
            let last = terms[t].blocks.last;
            let mut j = block[t];
            while j < last.len() && last[j] < lo {
                j += 1;
            }
            block[t] = j;
            let mut b = 0.0f64;
            while j < last.len() {
                b = b.max(bounds[t][j]);
                if last[j] >= hi {
                    break;
                }
                j += 1;
            }
            bound[t] = b;
        }
        by_bound.sort_by(|&a, &b| bound[b].total_cmp(&bound[a]).then(a.cmp(&b)));
        for i in (0..m).rev() {
            rest[i] = rest[i + 1] + bound[by_bound[i]];
        }
        let threshold = top.threshold();
        let mut essential = m;
        while essential > 0 && rest[essential - 1] * (1.0 + SLACK) < threshold {
            essential -= 1;
        }
        if essential > 0 {
            // Non-essential tokens whose lists are not much longer than the
            // essential ones' are read in full too (see `Stretch`): from the
            // first, in `by_bound` order, up to `gathered`.
            let essential_len: usize = by_bound[..essential]
                .iter()
                .map(|&t| terms[t].list.docs.len())
                .sum();
            let mut gathered = essential;
            while gathered < m
                && terms[by_bound[gathered]].list.docs.len() <= GATHER * essential_len
            {
                gathered += 1;
            }
            // One essential token alone: the weighted frequency `x` it needs
            // for `idf · x / (k1 + x)` to reach the threshold with the other
            // tokens' bounds, lowered by the slack for rounding.
            let mut x_need = 0.0;
            if essential == 1 {
                let need = threshold / (1.0 + 2.0 * SLACK) - rest[1];
                let idf = terms[by_bound[0]].idf;
                if need > 0.0 && need < idf {
                    x_need = need * params.k1 / (idf - need) * (1.0 - SLACK);
                }
            }
            let ess = &by_bound[..essential];
            stretch.gather(
                (lo, hi),
                ess,
                &by_bound[essential..gathered],
                x_need,
                &terms,
                &mut cursors,
                &mut entry_bounds,
                (params, &norms),
            );
            let cut = |threshold: f64| drain_cut(threshold, rest[gathered]);
            let mut drain = stretch.drain(lo, cut(top.threshold()));
            while let Some((d, bound)) = drain.next() {
                if !allows(allowed, d) {
                    continue;
                }
                let threshold = top.threshold();
                if (bound + rest[gathered]) * (1.0 + SLACK) < threshold {
                    continue;
                }
                for &t in ess {
                    cursors[t].seek(&terms[t], d);
                }
                if let Some(score) = score_rest(
                    d,
                    essential,
                    threshold,
                    &by_bound,
                    &rest,
                    &terms,
                    &mut cursors,
                    &mut parts,
                    &lengths,
                    params,
                    &norms,
                ) {
                    top.offer(Hit { score, position: d });
                    drain.cut = cut(top.threshold());
                }
            }
        }
        if hi == u32::MAX {
            break;
        }
        from = hi + 1;
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
