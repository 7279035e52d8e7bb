//! The exhaustive BM25F ranking, term at a time (docs/spec.md §12.3): each
//! query token's list is walked once, in query order, adding the token's
//! score to its concepts' accumulators, so each concept's sum is taken in
//! query order exactly as a concept-at-a-time walk takes it (adding the `0`
//! of a token a concept lacks changes nothing). Then the concepts with a
//! score are ranked.

use std::cell::RefCell;

use super::search::Ranked;
use super::topk::{Hit, TopK};
use super::{allows, saturate, weighted_tf, Lengths, Norms, Params, Term};
use crate::index::bm25f::Bm25fIndex;

thread_local! {
    /// One accumulator per concept, all `0` between searches: allocating and
    /// zeroing one per search would cost more than the search on a large
    /// bundle. Grown to the largest bundle this thread searched.
    static SCORES: RefCell<Vec<f64>> = const { RefCell::new(Vec::new()) };
}

/// Puts the accumulators it was given back to `0` however the search ends,
/// so a search that panics cannot leave scores for the next one.
struct Accumulators<'a> {
    scores: &'a mut Vec<f64>,
    /// The concepts with a score, in the order they first got one.
    touched: Vec<u32>,
}

impl Drop for Accumulators<'_> {
    fn drop(&mut self) {
        for &d in &self.touched {
            self.scores[d as usize] = 0.0;
        }
    }
}

/// Every concept with a score for `terms` among the positions set in
/// `allowed` (all without it), by score, then position.
pub(super) fn rank(
    index: &Bm25fIndex,
    terms: &[Term<'_>],
    params: &Params,
    norms: &Norms,
    allowed: Option<&[u64]>,
    limit: Option<usize>,
) -> Ranked {
    SCORES.with(|cell| {
        let mut scores = cell.borrow_mut();
        let n = index.len();
        if scores.len() < n {
            scores.resize(n, 0.0);
        }
        let mut acc = Accumulators {
            scores: &mut scores,
            touched: Vec::new(),
        };
        for t in terms {
            add(index, t, params, norms, &mut acc);
        }
        let mut top = TopK::new(limit);
        for &d in acc.touched.iter().filter(|&&d| allows(allowed, d)) {
            top.offer(Hit {
                score: acc.scores[d as usize],
                position: d,
            });
        }
        top.ranked()
    })
}

/// Adds token `t`'s score to each of its concepts' accumulators.
fn add(
    index: &Bm25fIndex,
    t: &Term<'_>,
    params: &Params,
    norms: &Norms,
    acc: &mut Accumulators<'_>,
) {
    let scores = &mut acc.scores[..index.len()];
    let lengths = Lengths::of(index);
    for (d, tfs) in t.list.entries() {
        // A saved list naming a concept out of range (a tampered cache file:
        // its lists are not read at open, docs/spec.md §9.3) scores nothing.
        let (Some(x), Some(score)) = (
            weighted_tf(params, norms, tfs, &lengths, d),
            scores.get_mut(d as usize),
        ) else {
            continue;
        };
        let s = saturate(params, t.idf, x);
        if s > 0.0 {
            if *score == 0.0 {
                acc.touched.push(d);
            }
            *score += s;
        }
    }
}
